// fork + exec of the job in its own process group. The exec outcome comes
// back through a close-on-exec pipe, so "command not found" is known before
// the supervisor goes on. Main thread, before any other thread exists (the
// child of a multi-threaded fork may only call async-signal-safe functions;
// everything it needs is prepared before the fork).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace xpu_timer::supervisor {

struct LaunchSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;
  // Dispositions to give the child for signals the supervisor changed (the
  // child starts with what the supervisor itself inherited).
  std::vector<std::pair<int, struct sigaction>> restore_signals;
};

struct LaunchResult {
  pid_t pid = -1;      // > 0: the job runs, in process group `pid`
  int exec_errno = 0;  // != 0: exec failed (the child has been reaped)
  std::string error;   // one line when pid <= 0
};

LaunchResult launch_job(const LaunchSpec& spec);

// Ignores `signo` in this process and returns the disposition it replaced,
// which the job gets back through LaunchSpec::restore_signals.
struct sigaction ignore_signal(int signo);

// Exit code a shell uses for an exec failure: 127 not found, 126 otherwise.
int exit_code_for_exec_errno(int err);

}  // namespace xpu_timer::supervisor
