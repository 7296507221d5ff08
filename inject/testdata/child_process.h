// A child process for the inject integration tests: its own process group,
// stdin/stdout pipes (stderr goes to stdout), every wait bounded. The
// destructor SIGKILLs the group if it still runs and reaps the child.
// Used by the test's main thread only.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace xpu_timer::inject::testing {

class ChildProcess {
 public:
  // `env` entries ("NAME=value") override this process's environment;
  // `unset` names are removed from it.
  static std::unique_ptr<ChildProcess> start(const std::vector<std::string>& argv,
                                             const std::vector<std::string>& env,
                                             const std::vector<std::string>& unset = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool wait_for_output(const std::string& needle, double timeout_s);
  // Closes the child's stdin (the "wait" step of the driver then returns).
  void close_stdin();
  // Exit code, or -1 on timeout / -(128+sig) when killed by a signal.
  int wait_exit(double timeout_s);
  const std::string& output() const { return output_; }

 private:
  ChildProcess() = default;
  bool read_some(double timeout_s);

  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  bool reaped_ = false;
  bool eof_ = false;
  std::string output_;
};

}  // namespace xpu_timer::inject::testing
