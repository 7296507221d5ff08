#include "supervisor/job/exit_status.h"

#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace xpu_timer::supervisor {

JobExit job_exit_from_wait_status(int wait_status) {
  JobExit e;
  if (WIFSIGNALED(wait_status)) {
    e.by_signal = true;
    e.value = WTERMSIG(wait_status);
  } else if (WIFEXITED(wait_status)) {
    e.value = WEXITSTATUS(wait_status);
  } else {
    e.value = 1;  // stopped/continued are not ends; callers never pass them
  }
  return e;
}

std::string describe(const JobExit& e) {
  if (!e.by_signal) return "exit code " + std::to_string(e.value);
  const char* name = strsignal(e.value);
  return "signal " + std::to_string(e.value) + " (" + (name ? name : "?") + ")";
}

int shell_exit_code(const JobExit& e) { return e.by_signal ? 128 + e.value : e.value; }

void exit_like(const JobExit& e) {
  if (!e.by_signal) std::_Exit(e.value);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(e.value, &sa, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, e.value);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  kill(getpid(), e.value);
  raise(e.value);
  std::_Exit(128 + e.value);
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace xpu_timer::supervisor
