// How the supervisor ends so that its parent sees exactly the job's end: the
// same exit code, or death by the same signal. Main thread only.
#pragma once

#include <string>

namespace xpu_timer::supervisor {

struct JobExit {
  bool by_signal = false;
  int value = 0;  // exit code, or signal number when by_signal
};

// Decodes a waitpid() status of an exited or killed process.
JobExit job_exit_from_wait_status(int wait_status);

// "exit code 3", "signal 15 (Terminated)" for log lines.
std::string describe(const JobExit& e);

// The shell's convention for a status byte: code, or 128 + signal.
int shell_exit_code(const JobExit& e);

// "SIGSEGV", "signal 40".
std::string signal_name(int sig);

// Ends this process like the job ended. For a signal: core dumps off (the
// job already dumped its own), default disposition, unblocked, raised; if the
// signal does not kill (it should), falls back to exit(128 + signal).
[[noreturn]] void exit_like(const JobExit& e);

}  // namespace xpu_timer::supervisor
