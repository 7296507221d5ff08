// A child process for the simgpu tests: started in its own process group
// with stdout+stderr captured through a pipe; every wait is bounded. The
// destructor SIGKILLs the group (the child and anything it spawned) if it is
// still running, and reaps the child, so a failed test leaks nothing.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace xpu_timer::simgpu::testing {

class TestProcess {
 public:
  // argv[0] is a path or a name looked up in PATH; `env` entries
  // ("NAME=value") are added to (or override) this process's environment.
  static std::unique_ptr<TestProcess> start(const std::vector<std::string>& argv,
                                            const std::vector<std::string>& env = {});
  ~TestProcess();
  TestProcess(const TestProcess&) = delete;
  TestProcess& operator=(const TestProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reads output until it contains `needle`; false on timeout or EOF.
  bool wait_for_output(const std::string& needle, double timeout_s);
  // Waits for exit; false on timeout. *status is the raw waitpid status.
  bool wait_exit(double timeout_s, int* status);
  // Everything read so far (wait_exit reads the rest).
  const std::string& output() const { return output_; }
  bool send_signal(int sig);

 private:
  TestProcess(pid_t pid, int out_fd) : pid_(pid), out_fd_(out_fd) {}
  // Reads what is available within `timeout_s`; false at EOF.
  bool read_some(double timeout_s);

  pid_t pid_;
  int out_fd_;
  bool reaped_ = false;
  bool eof_ = false;
  std::string output_;
};

// A job id unique to this test process and call ("simgpu-test-<pid>-<n>").
std::string unique_job_id();
// Removes /dev/shm/xpu_sim_<job>_* left by a test.
void remove_segments(const std::string& job_id);
int count_segments(const std::string& job_id);

}  // namespace xpu_timer::simgpu::testing
