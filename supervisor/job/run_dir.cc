#include "supervisor/job/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "common/parse_number.h"
#include "common/unique_fd.h"
#include "supervisor/job/process_table.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {
namespace {

constexpr char kPrefix[] = "xpu_timer.";
constexpr char kOwnerFile[] = "owner";
constexpr size_t kRandomChars = 6;  // mkdtemp's XXXXXX

std::string errno_text() { return strerror(errno); }

// The pid in "xpu_timer.<pid>.XXXXXX"; nullopt for any other name.
std::optional<pid_t> owner_pid_of(const std::string& name) {
  const size_t prefix = sizeof(kPrefix) - 1;
  if (name.compare(0, prefix, kPrefix) != 0) return std::nullopt;
  const size_t dot = name.find('.', prefix);
  if (dot == std::string::npos || dot == prefix || dot > prefix + 9 ||
      name.size() != dot + 1 + kRandomChars) {
    return std::nullopt;
  }
  const std::optional<uint64_t> pid =
      parse_uint(std::string_view(name).substr(prefix, dot - prefix));
  if (!pid) return std::nullopt;
  for (size_t i = dot + 1; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) return std::nullopt;
  }
  if (*pid == 0) return std::nullopt;
  return static_cast<pid_t>(*pid);
}

// The start time the owner file records; nullopt when it is absent or
// unreadable (a supervisor killed between mkdtemp and writing it).
std::optional<uint64_t> recorded_start_time(int dir_fd, pid_t pid) {
  UniqueFd fd(::openat(dir_fd, kOwnerFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  char buf[64] = {};
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf) - 1);
  if (n <= 0) return std::nullopt;
  std::string_view text(buf, static_cast<size_t>(n));  // "PID START\n"
  const std::optional<int64_t> file_pid = take_int(&text);
  if (!file_pid || *file_pid != pid || text.empty() || text.front() != ' ') return std::nullopt;
  text.remove_prefix(1);
  return take_uint(&text);
}

// True when something accepts connections on the folder's rank socket: its
// supervisor lives, even if its pid means nothing here (another PID
// namespace sharing /dev/shm). A dead one's socket file refuses.
bool socket_answers(const std::string& folder) {
  const std::string path = folder + "/supervisor.sock";
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return false;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    return true;
  }
  return errno == EAGAIN || errno == EINPROGRESS;  // a full backlog: alive, and busy
}

// Unlinks the entries of the folder `dir_fd` (one level: sockets and page
// files) and then the folder `name` in `parent_fd`. ENOENT is not an error:
// another new supervisor may be cleaning the same folder.
bool remove_folder(int parent_fd, const std::string& name, int dir_fd, std::string* error) {
  UniqueFd list_fd(::dup(dir_fd));
  if (!list_fd.valid()) {
    *error = "dup: " + errno_text();
    return false;
  }
  DIR* dir = ::fdopendir(list_fd.get());
  if (dir == nullptr) {
    *error = "fdopendir: " + errno_text();
    return false;
  }
  list_fd.release();  // the DIR owns it now
  std::vector<std::string> entries;
  {
    std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, &::closedir);
    while (const dirent* e = ::readdir(dir)) {
      const std::string entry = e->d_name;
      if (entry != "." && entry != "..") entries.push_back(entry);
    }
  }
  for (const std::string& entry : entries) {
    if (::unlinkat(dir_fd, entry.c_str(), 0) != 0 && errno != ENOENT) {
      *error = "cannot remove " + entry + ": " + errno_text();
      return false;
    }
  }
  if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    *error = errno_text();
    return false;
  }
  return true;
}

}  // namespace

StaleRunDirs remove_stale_run_dirs(const std::string& base) {
  StaleRunDirs out;
  UniqueFd base_fd(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!base_fd.valid()) return out;  // no such base: nothing left behind there
  std::vector<std::pair<std::string, pid_t>> candidates;
  {
    UniqueFd list_fd(::dup(base_fd.get()));
    DIR* dir = list_fd.valid() ? ::fdopendir(list_fd.get()) : nullptr;
    if (dir == nullptr) {
      out.problems.push_back("cannot list " + base + ": " + errno_text());
      return out;
    }
    list_fd.release();  // the DIR owns it now
    std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, &::closedir);
    while (const dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (const std::optional<pid_t> pid = owner_pid_of(name)) candidates.emplace_back(name, *pid);
    }
  }
  for (const auto& [name, pid] : candidates) {
    if (pid == ::getpid()) continue;
    struct stat st;
    if (::fstatat(base_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    // Only our user's real folders: never another user's, never a link.
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    UniqueFd dir_fd(
        ::openat(base_fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir_fd.valid()) continue;
    const std::optional<uint64_t> start = recorded_start_time(dir_fd.get(), pid);
    // Without a recorded start time a live pid counts as the owner: a
    // folder is never taken from a supervisor that may still be running.
    if (process_alive(pid, start.value_or(0))) continue;
    const std::string path = base + "/" + name;
    if (socket_answers(path)) continue;
    std::string error;
    if (remove_folder(base_fd.get(), name, dir_fd.get(), &error)) {
      out.removed.push_back(path);
    } else {
      out.problems.push_back("cannot remove the stale run directory " + path + ": " + error);
    }
  }
  return out;
}

RunDir RunDir::create(std::string* error) { return create_in({"/dev/shm", "/tmp"}, error); }

RunDir RunDir::create_in(const std::vector<std::string>& bases, std::string* error) {
  std::string last_error;
  const pid_t self = ::getpid();
  for (const std::string& base : bases) {
    const StaleRunDirs stale = remove_stale_run_dirs(base);
    for (const std::string& p : stale.removed) {
      SUP_LOG_INFO("removed %s, left by a supervisor that is gone", p.c_str());
    }
    for (const std::string& p : stale.problems) SUP_LOG_WARN("%s", p.c_str());

    std::string templ = base + "/" + kPrefix + std::to_string(self) + ".XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      last_error = templ + ": " + errno_text();
      continue;
    }
    RunDir dir{std::string(buf.data())};
    // The start time tells our folder from one of a later process that
    // happens to get our pid; without it only the pid is compared.
    if (const std::optional<ProcStat> st = read_proc_stat(self)) {
      const std::string owner = dir.path() + "/" + kOwnerFile;
      UniqueFd fd(::open(owner.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      char text[64];
      const int n = std::snprintf(text, sizeof(text), "%d %" PRIu64 "\n", static_cast<int>(self),
                                  st->start_time);
      if (!fd.valid() || ::write(fd.get(), text, static_cast<size_t>(n)) != n) {
        SUP_LOG_WARN("cannot write %s: %s", owner.c_str(), errno_text().c_str());
      }
    }
    return dir;
  }
  if (error != nullptr) *error = "cannot create a run directory: " + last_error;
  return RunDir();
}

RunDir::~RunDir() { remove(); }

RunDir::RunDir(RunDir&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}

RunDir& RunDir::operator=(RunDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, std::string());
  }
  return *this;
}

void RunDir::remove() {
  if (path_.empty()) return;
  // Only one level: the socket, the page files and the owner file.
  if (DIR* dir = ::opendir(path_.c_str())) {
    std::vector<std::string> names;
    while (const dirent* ent = ::readdir(dir)) {
      const std::string name = ent->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(dir);
    for (const std::string& n : names) ::unlink((path_ + "/" + n).c_str());
  }
  ::rmdir(path_.c_str());
  path_.clear();
}

}  // namespace xpu_timer::supervisor
