// Fatal-signal handlers of the injected library (docs/architecture.md "Crash forensics").
//
// install_crash_handlers() runs once, lazily, from Runtime initialisation on
// the first hooked CUDA/NCCL call, i.e. after the interpreter and torch set
// up their own handlers (Python's faulthandler when enabled at start-up,
// Python's SIGPIPE=SIG_IGN, torch's). We never re-install on top of a later
// handler: faulthandler and c10's FatalSignalHandler save the handler they
// replace (ours) and call it, so both still run; a later handler that does
// not chain (signal.signal(SIGTERM, f)) means the program took that signal
// over, and not reporting it is then right.
//
// On a signal: capture the faulting thread's native stack (libgcc's
// _Unwind_Backtrace, names from the in-memory .dynsym: no malloc, no locks
// of ours), send one CrashReportMsg on the supervisor link (or, with no
// supervisor, write xpu_timer_crash-rank<R>-<pid>.txt), then chain: call the
// previous sa_sigaction/sa_handler; for SIG_DFL restore the default and
// re-raise, so the process dies exactly as it would have.
//
// Before chaining, a crash (not a termination request) waits at most
// `wait_ms` for the supervisor to read the process's Python stacks from
// outside (ptrace; reading CPython's structures from a signal handler is not
// safe, the interpreter may be what broke). The report carries one end of a
// socket pair (SCM_RIGHTS); the supervisor closes it when done, and so does
// the kernel when the supervisor dies, so the wait ends at once in both
// cases and never outlasts the bound.
//
// Threads: install/set_link_fd/forget from the runtime's threads; the
// handler on whichever thread the signal hits. One report per process; a
// signal arriving while a report is being made (a second crashing thread, or
// a fault inside our handler) goes straight to the previous disposition.
#pragma once

namespace xpu_timer::inject {

struct CrashConfig {
  int rank = 0;
  int link_fd = -1;             // supervisor socket (SOCK_SEQPACKET), -1: none
  const char* crash_dir = "";  // where to write the text report with no supervisor ("": cwd)
  int wait_ms = 0;             // bound on waiting for the supervisor's stack read (0: none)
};

// Idempotent. False when no handler could be installed.
bool install_crash_handlers(const CrashConfig& config);

// The link closed (exit handler) or this is a fork child: from now on the
// handler writes its file (link_fd -1) or, in a fork child, only chains.
void crash_set_link_fd(int fd);
void crash_forget_process();  // fork child: never report, only chain
// Looks whether a handler installed after ours took one of our signals (the
// runtime's background thread calls it about once a second): logs it once
// (INFO, with its symbol and object), and a report of a signal that reaches
// ours without the kernel's siginfo names it as the caller.
void crash_watch_handlers();

}  // namespace xpu_timer::inject
