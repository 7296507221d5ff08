#include "inject/os_thread_names.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "common/unique_fd.h"

namespace xpu_timer::inject {
namespace {

constexpr size_t kCommBytes = 15;  // TASK_COMM_LEN - 1

struct Comm {
  char text[kCommBytes + 1] = {};
  bool operator==(const Comm& o) const { return std::strcmp(text, o.text) == 0; }
};

// Reads a comm file (ends in '\n'); false with errno on failure.
bool read_comm(const char* path, Comm* out) {
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  char buf[kCommBytes + 2] = {};
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf) - 1);
  if (n < 0) return false;
  size_t len = static_cast<size_t>(n);
  while (len > 0 && buf[len - 1] == '\n') --len;
  if (len > kCommBytes) len = kCommBytes;
  std::memcpy(out->text, buf, len);
  out->text[len] = '\0';
  return true;
}

// The names a thread may hold without having chosen it: guarded by g_mutex.
// Bounded: past kMaxInherited the names given are not remembered, so a
// thread inheriting one is left alone (its frames still say which it is).
constexpr size_t kMaxInherited = 64;
std::mutex g_mutex;
Comm g_inherited[kMaxInherited];
size_t g_inherited_count = 0;

bool inherited_locked(const Comm& c) {
  for (size_t i = 0; i < g_inherited_count; ++i) {
    if (g_inherited[i] == c) return true;
  }
  return false;
}

void remember_locked(const Comm& c) {
  if (!inherited_locked(c) && g_inherited_count < kMaxInherited)
    g_inherited[g_inherited_count++] = c;
}

}  // namespace

OsThreadNaming name_os_thread(pid_t tid, std::string_view name) {
  if (tid <= 0 || name.empty()) {
    errno = EINVAL;
    return OsThreadNaming::kFailed;
  }
  Comm wanted;
  const size_t len = std::min(name.size(), kCommBytes);
  std::memcpy(wanted.text, name.data(), len);  // a NUL in `name` ends it, as prctl does
  if (wanted.text[0] == '\0') {
    errno = EINVAL;
    return OsThreadNaming::kFailed;
  }
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/comm", static_cast<int>(tid));

  std::lock_guard<std::mutex> lock(g_mutex);
  Comm process, current;
  if (!read_comm("/proc/self/comm", &process) || !read_comm(path, &current)) {
    return OsThreadNaming::kFailed;
  }
  remember_locked(process);  // first call: the name every thread started with
  if (current == wanted) return OsThreadNaming::kNamed;
  if (!(current == process) && !inherited_locked(current)) return OsThreadNaming::kOwnName;
  // The kernel lets a thread rename another of its thread group through
  // this file (prctl and pthread_setname_np's own path name only oneself or
  // go through it too).
  UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return OsThreadNaming::kFailed;
  const size_t bytes = std::strlen(wanted.text);
  if (::write(fd.get(), wanted.text, bytes) != static_cast<ssize_t>(bytes)) {
    return OsThreadNaming::kFailed;
  }
  remember_locked(wanted);
  return OsThreadNaming::kNamed;
}

}  // namespace xpu_timer::inject
