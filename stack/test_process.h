// Test helper: a child process with a readiness handshake over a pipe, killed
// and reaped when the helper goes out of scope. Used by stack_process_test only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace xpu_timer::stack::testing {

class TestProcess {
 public:
  // Starts argv; the child's stdout (or, with ready_fd_arg, an extra pipe
  // whose fd number replaces "{fd}" in argv) is read by wait_for_line().
  TestProcess(std::vector<std::string> argv, bool ready_on_extra_fd = false);
  ~TestProcess();
  TestProcess(const TestProcess&) = delete;
  TestProcess& operator=(const TestProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Next line written by the child, or "" after timeout / EOF.
  std::string wait_for_line(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));
  // Kills and reaps; returns false if it had already exited.
  void kill_and_reap();
  // Reaps if it has exited (bounded wait); true when reaped.
  bool reap(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int read_fd_ = -1;
  std::string buffer_;
  bool reaped_ = false;
};

// State letter from /proc/PID/stat, '?' if gone.
char process_state(pid_t pid);
// True if no thread of pid is in a ptrace/job stop ('t' / 'T').
bool no_thread_stopped(pid_t pid);
// Waits (bounded) until every thread's state satisfies the predicate letter set.
bool wait_threads_state(pid_t pid, const std::string& allowed, std::chrono::milliseconds timeout);

}  // namespace xpu_timer::stack::testing
