// The supervisor's private run directory (mode 0700, from mkdtemp under
// /dev/shm, else /tmp): it holds the unix socket the ranks connect to and the
// ranks' status page files. Removed with its files on destruction. Main thread.
#pragma once

#include <string>

namespace xpu_timer::supervisor {

class RunDir {
 public:
  // Empty path() on failure, with `error` set.
  static RunDir create(std::string* error);
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

}  // namespace xpu_timer::supervisor
