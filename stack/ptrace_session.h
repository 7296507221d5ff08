// Stops every thread of a process with PTRACE_SEIZE + PTRACE_INTERRUPT and
// detaches them all when destroyed (RAII, also on every error path).
//
// Threading hazard: ptrace requests and waits for a tracee must come from the
// tracer *thread*. A thread that never reached its stop (uninterruptible
// sleep, state D) cannot be detached (PTRACE_DETACH needs a stopped tracee);
// the kernel releases it when the tracer thread exits. So a session must live
// on a short-lived thread created for it (the collector does that) or in a
// forked child: never on a long-lived thread of the supervisor.
//
// Waits use waitpid(tid, __WALL | WNOHANG) per tid, never waitpid(-1), so the
// exit status of a traced process that is also our child is not stolen: an
// exit of the thread-group leader is only peeked at (WNOWAIT).
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <chrono>
#include <string>
#include <vector>

namespace xpu_timer::stack {

struct StoppedThread {
  pid_t tid = 0;
  bool stopped = false;  // reached a ptrace stop; registers valid
  user_regs_struct regs{};
  int pending_signal = 0;  // signal to re-inject at detach
};

enum class AttachStatus {
  kOk,          // all threads (or all but some listed in errors) stopped
  kNoProcess,   // gone before we could attach
  kZombie,      // nothing to attach to
  kPermission,  // EPERM
  kFailed,      // any other error (message in error())
};

class PtraceSession {
 public:
  PtraceSession() = default;
  ~PtraceSession() { detach_all(); }
  PtraceSession(const PtraceSession&) = delete;
  PtraceSession& operator=(const PtraceSession&) = delete;

  // Stops all threads of pid. stop_timeout bounds the wait for the threads to
  // stop (all threads are interrupted at once, then waited for together).
  AttachStatus attach(pid_t pid, std::chrono::milliseconds stop_timeout);

  // Detaches every thread (idempotent). Afterwards stopped_ms() is final.
  void detach_all();

  const std::vector<StoppedThread>& threads() const { return threads_; }
  // One clear line per problem (fatal ones: the first line).
  const std::vector<std::string>& errors() const { return errors_; }
  // Time from the first PTRACE_INTERRUPT to the last detach (or now).
  double stopped_ms() const;

 private:
  bool seize_and_interrupt(pid_t tid, AttachStatus* fatal);
  void wait_for_stops(std::chrono::steady_clock::time_point deadline);

  pid_t pid_ = 0;
  std::vector<StoppedThread> threads_;
  std::vector<std::string> errors_;
  bool stop_started_ = false;
  bool detached_ = false;
  std::chrono::steady_clock::time_point stop_begin_{};
  std::chrono::steady_clock::time_point stop_end_{};
};

}  // namespace xpu_timer::stack
