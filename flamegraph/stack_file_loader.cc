#include "flamegraph/stack_file_loader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "flamegraph/stack_file_parser.h"

namespace xpu_timer::flamegraph {
namespace {

constexpr std::string_view kSuffix = ".stacktrace";

std::string errno_text(int err) { return std::string(std::strerror(err)); }

bool read_file(const std::string& path, size_t max_bytes, std::string* text, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open: " + errno_text(errno);
    return false;
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    *error = "cannot stat: " + errno_text(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = "not a regular file";
    return false;
  }
  if (static_cast<unsigned long long>(st.st_size) > max_bytes) {
    *error = "too large (" + std::to_string(st.st_size) + " bytes, limit " +
             std::to_string(max_bytes) + ")";
    return false;
  }
  text->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < text->size()) {
    const ssize_t n = ::read(fd, text->data() + done, text->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = "cannot read: " + errno_text(errno);
      return false;
    }
    if (n == 0) break;  // shrank while we read: decode what is there
    done += static_cast<size_t>(n);
  }
  text->resize(done);
  return true;
}

// A decoded file or the reason it was skipped, produced by a worker for slot i.
struct Slot {
  bool ready = false;
  bool ok = false;
  StackFile file;
  std::string error;
};

}  // namespace

bool list_stack_files(const std::string& dir, std::vector<std::string>* paths, std::string* error) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    *error = "cannot open folder " + dir + ": " + errno_text(errno);
    return false;
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(d, &::closedir);
  const std::string prefix = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name.size() <= kSuffix.size() || name.substr(name.size() - kSuffix.size()) != kSuffix) {
      continue;
    }
    const std::string path = prefix + std::string(name);
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) paths->push_back(path);
  }
  if (errno != 0) {
    *error = "cannot list folder " + dir + ": " + errno_text(errno);
    return false;
  }
  std::sort(paths->begin(), paths->end());
  return true;
}

bool load_stack_file(const std::string& path, size_t max_file_bytes, StackFile* out,
                     std::string* error) {
  std::string text;
  if (!read_file(path, max_file_bytes, &text, error)) return false;
  if (!parse_stack_file(text, out, error)) return false;
  out->path = path;
  return true;
}

LoadSummary load_stack_files(const std::vector<std::string>& paths, const LoadOptions& options,
                             const std::function<void(StackFile&&)>& sink) {
  LoadSummary summary;
  const size_t total = paths.size();
  unsigned workers =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  workers = static_cast<unsigned>(std::min<size_t>(workers, std::max<size_t>(total, 1)));
  // Workers may run this far ahead of the sink: bounds memory to a few dozen
  // decoded files whatever the size of the dump.
  const size_t window = 8 * static_cast<size_t>(workers);

  std::vector<Slot> slots(total);
  std::mutex mu;
  std::condition_variable slot_ready;    // a worker finished a slot
  std::condition_variable window_moved;  // the sink consumed a slot
  size_t next_to_take = 0;
  size_t consumed = 0;
  bool stop = false;

  auto work = [&] {
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mu);
        window_moved.wait(lock, [&] { return stop || next_to_take < consumed + window; });
        if (stop || next_to_take >= total) return;
        i = next_to_take++;
      }
      Slot result;
      result.ok = load_stack_file(paths[i], options.max_file_bytes, &result.file, &result.error);
      {
        std::lock_guard<std::mutex> lock(mu);
        slots[i] = std::move(result);
        slots[i].ready = true;
      }
      slot_ready.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w) threads.emplace_back(work);

  for (size_t i = 0; i < total; ++i) {
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mu);
      slot_ready.wait(lock, [&] { return slots[i].ready; });
      slot = std::move(slots[i]);
      slots[i] = Slot{};
      ++consumed;
    }
    window_moved.notify_all();
    // The sink runs outside the lock so that workers keep decoding meanwhile.
    if (slot.ok) {
      ++summary.loaded;
      sink(std::move(slot.file));
    } else {
      summary.problems.push_back(LoadProblem{paths[i], slot.error});
    }
    if (options.on_progress) options.on_progress(i + 1, total);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  window_moved.notify_all();
  for (auto& t : threads) t.join();
  return summary;
}

}  // namespace xpu_timer::flamegraph
