// The supervisor's private run directory (mode 0700, from mkdtemp under
// /dev/shm, else /tmp): it holds the unix socket the ranks connect to and the
// ranks' status page files. Removed with its files on destruction. Main thread.
//
// Naming: `<base>/xpu_timer.<supervisor pid>.XXXXXX`, with a file `owner`
// holding "<pid> <start time>" (clock ticks after boot, /proc/PID/stat field
// 22). A supervisor killed with SIGKILL cannot remove its folder, and /dev/shm
// is memory: so create() first removes the folders of this naming, owned by
// our user, whose supervisor is gone (no such pid, or the pid now belongs to
// a process started at another time, and nothing answers on its socket: a
// supervisor of another PID namespace sharing /dev/shm still does). A folder
// whose owner lives, or that does not follow the naming, is never touched.
#pragma once

#include <string>
#include <vector>

namespace xpu_timer::supervisor {

class RunDir {
 public:
  // Removes stale run directories under /dev/shm and /tmp (logged), then
  // creates ours in the first base that works. Empty path() on failure,
  // with `error` set.
  static RunDir create(std::string* error);
  // The same under the given bases (tests).
  static RunDir create_in(const std::vector<std::string>& bases, std::string* error);
  RunDir() = default;
  ~RunDir();
  RunDir(RunDir&& other) noexcept;
  RunDir& operator=(RunDir&& other) noexcept;
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  const std::string& path() const { return path_; }
  std::string socket_path() const { return path_ + "/supervisor.sock"; }

 private:
  explicit RunDir(std::string path) : path_(std::move(path)) {}
  void remove();
  std::string path_;
};

struct StaleRunDirs {
  std::vector<std::string> removed;   // paths
  std::vector<std::string> problems;  // one line each: a stale folder that could not be removed
};

// Removes the run directories under `base` left by supervisors that are gone
// (see the naming above). Never follows a symbolic link.
StaleRunDirs remove_stale_run_dirs(const std::string& base);

}  // namespace xpu_timer::supervisor
