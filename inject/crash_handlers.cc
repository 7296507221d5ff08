#include "inject/crash_handlers.h"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "common/rank_messages.h"
#include "inject/crash_report_text.h"
#include "inject/crash_stack.h"

namespace xpu_timer::inject {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGPIPE};
constexpr int kMaxSignal = 65;
constexpr size_t kAltStackBytes = 64 * 1024;
constexpr pid_t kMaxPid = 4194304;  // PID_MAX_LIMIT on 64-bit Linux

// Everything the handler reads is set before the handlers are installed (or
// is atomic), lives in static storage, and is never freed.
std::atomic<bool> g_installed{false};
std::atomic<bool> g_forgotten{false};  // fork child: chain only
std::atomic<int> g_link_fd{-1};
std::atomic<int> g_reporter_tid{0};  // the thread making the one report; stays set
std::atomic<bool> g_report_done{false};
struct sigaction g_previous[kMaxSignal];
bool g_ours[kMaxSignal];
// The handler found installed in our place by crash_watch_handlers (0: none
// seen): who brings a signal to ours when the kernel did not.
std::atomic<uintptr_t> g_replaced_by[kMaxSignal];
int g_rank = 0;
int g_wait_ms = 0;
pid_t g_pid = 0;
char g_exe_path[proto::kCrashModuleBytes];
char g_text_path[512];
proto::CrashReportMsg g_msg;

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// The handler a sigaction installs, as an address (SIG_DFL 0, SIG_IGN 1).
uintptr_t handler_address(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) ? reinterpret_cast<uintptr_t>(a.sa_sigaction)
                                   : reinterpret_cast<uintptr_t>(a.sa_handler);
}

bool synchronous_fault(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

bool previous_is_default(int sig) {
  const struct sigaction& p = g_previous[sig];
  return !(p.sa_flags & SA_SIGINFO) && p.sa_handler == SIG_DFL;
}

// SIGTERM and SIGPIPE are ordinary requests when the program handles them;
// they are a death to report only when their default action will run.
bool worth_reporting(int sig) {
  if (sig == SIGTERM || sig == SIGPIPE) return previous_is_default(sig);
  return true;
}

// A crash worth its Python stacks; a termination request is not waited on.
bool waits_for_stacks(int sig) { return synchronous_fault(sig) || sig == SIGABRT; }

// Why `info` is not the kernel's siginfo for this delivery (kNone: it is).
// The kernel fills a siginfo only for a handler installed with SA_SIGINFO,
// so the handler installed now must have it: a handler installed without it
// (a later one, or ours put back by code that restores handlers with
// signal()) is entered with pointers to an unfilled siginfo, and what it
// hands on to ours is stack garbage where the sender and code should be.
// `info` must sit where the kernel's signal frame puts it relative to
// `ucontext` (x86_64's rt_sigframe: {pretcode; the kernel's ucontext, which
// ends at its 8-byte signal mask; siginfo}, arm64's {siginfo; ucontext};
// compared, never dereferenced), and hold what a kernel can say.
// `installed`: the handler installed now.
proto::CrashSiginfoDoubt siginfo_doubt(int sig, const siginfo_t* info, const void* ucontext,
                                       const struct sigaction& installed) {
  using D = proto::CrashSiginfoDoubt;
  if (!(installed.sa_flags & SA_SIGINFO)) return D::kNoSaSiginfo;
  if (info == nullptr || ucontext == nullptr) return D::kNoPointers;
  const auto at = reinterpret_cast<uintptr_t>(info);
  const auto uc = reinterpret_cast<uintptr_t>(ucontext);
#if defined(__x86_64__)
  if (at != uc + offsetof(ucontext_t, uc_sigmask) + 8) return D::kNotInFrame;
#elif defined(__aarch64__)
  if (uc != at + sizeof(siginfo_t)) return D::kNotInFrame;
#else
#error "the kernel's signal frame layout of this architecture is not known"
#endif
  if (info->si_signo != sig) return D::kSigno;
  // What the kernel can say, and nothing else: a code it uses (SI_TKILL..
  // SI_USER, SI_KERNEL, or a signal's own small positive codes), and for a
  // signal a process sent, a pid that can be one.
  const int code = info->si_code;
  if (!((code >= SI_TKILL && code <= SI_USER) || code == SI_KERNEL || (code > 0 && code < 64))) {
    return D::kCode;
  }
  if (code <= 0 && code != SI_KERNEL && (info->si_pid <= 0 || info->si_pid > kMaxPid)) {
    return D::kPid;
  }
  return D::kNone;
}

// Sends the report. With `with_release`, one end of a fresh socket pair rides
// along (SCM_RIGHTS) and the other is returned in *release (-1: none). All of
// it async-signal-safe: socketpair, sendmsg and close are.
bool send_report(int fd, proto::CrashReportMsg* m, bool with_release, int* release) {
  *release = -1;
  int pair[2] = {-1, -1};
  if (with_release && ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0) {
    m->flags |= proto::kCrashFlagAwaitsRelease;
  }
  iovec iov{m, sizeof(*m)};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (pair[1] >= 0) {
    std::memset(control, 0, sizeof(control));
    h.msg_control = control;
    h.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pair[1], sizeof(int));
  }
  const ssize_t n = ::sendmsg(fd, &h, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (pair[1] >= 0) ::close(pair[1]);  // in flight now: the supervisor's copy is its own
  if (n != static_cast<ssize_t>(sizeof(*m))) {
    if (pair[0] >= 0) ::close(pair[0]);
    m->flags &= ~proto::kCrashFlagAwaitsRelease;
    return false;
  }
  *release = pair[0];
  return true;
}

// Waits until the supervisor closes its end (it read the stacks, gave up, or
// died: the kernel closes it then) or g_wait_ms passed, whichever is first.
// A ptrace stop interrupts poll(); the deadline is on CLOCK_MONOTONIC.
void await_release(int fd) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(g_wait_ms) * 1000000ull;
  for (;;) {
    const uint64_t now = monotonic_ns();
    if (now >= deadline) break;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>((deadline - now + 999999) / 1000000));
    if (r >= 0 || errno != EINTR) break;  // released, timed out, or poll failed
  }
  ::close(fd);
}

// `info` and `ucontext`: the kernel's, or null (then `caller` called us).
void build_and_send(int sig, const siginfo_t* info, void* ucontext, uintptr_t caller,
                    proto::CrashSiginfoDoubt doubt) {
  proto::CrashReportMsg& m = g_msg;
  if (info == nullptr) m.flags |= proto::kCrashFlagSiginfoNotKernels;
  m.siginfo_doubt = static_cast<uint32_t>(doubt);
  m.header = proto::make_header(proto::MsgType::kCrashReport, sizeof(proto::CrashReportMsg));
  m.pid = g_pid;
  m.tid = current_tid();
  m.rank = g_rank;
  m.signal = sig;
  m.si_code = info != nullptr ? info->si_code : 0;
  if (info != nullptr && info->si_code <= 0) {  // SI_USER, SI_TKILL, SI_QUEUE: sent by a process
    m.sender_pid = info->si_pid;
    m.sender_uid = static_cast<int32_t>(info->si_uid);
  }
  m.fault_addr = info != nullptr ? reinterpret_cast<uintptr_t>(info->si_addr) : 0;
  m.realtime_ns = realtime_ns();  // clock_gettime: async-signal-safe
  m.mono_ns = monotonic_ns();
  prctl(PR_GET_NAME, m.thread_name, 0, 0, 0);
  m.thread_name[sizeof(m.thread_name) - 1] = '\0';
  capture_crash_stack(ucontext, caller, g_exe_path, &m);

  const int fd = g_link_fd.load(std::memory_order_acquire);
  int release = -1;
  if (fd >= 0 && send_report(fd, &m, g_wait_ms > 0 && waits_for_stacks(sig), &release)) {
    if (release >= 0) await_release(release);
    return;
  }
  // No supervisor took it. A termination request (the launcher's SIGTERM
  // after the supervisor is gone, a closed pipe) is how jobs normally end:
  // only the supervisor, which knows whether the job was being stopped, may
  // call it a death. Left alone, it is no crash, and no file is written.
  if (sig == SIGTERM || sig == SIGPIPE) return;
  write_crash_report_text(g_text_path, m);
}

void maybe_report(int sig, const siginfo_t* info, void* ucontext, uintptr_t caller,
                  proto::CrashSiginfoDoubt doubt) {
  if (g_forgotten.load(std::memory_order_relaxed) || !worth_reporting(sig)) return;
  const pid_t self = current_tid();
  int expected = 0;
  if (!g_reporter_tid.compare_exchange_strong(expected, self)) {
    if (expected == self) return;  // a fault inside our own report: straight on
    // Another thread is reporting: let it finish (bounded) before this
    // signal's default action ends the process under it.
    const timespec pause{0, 10 * 1000 * 1000};
    const int rounds = 200 + g_wait_ms / 10;  // 2 s beyond the reporter's own wait
    for (int i = 0; i < rounds && !g_report_done.load(std::memory_order_acquire); ++i) {
      nanosleep(&pause, nullptr);
    }
    return;
  }
  build_and_send(sig, info, ucontext, caller, doubt);
  g_report_done.store(true, std::memory_order_release);
}

void die_by_default(int sig, const siginfo_t* info) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  // A genuine fault re-executes its instruction on return and faults again,
  // now fatally, so the core file shows the real fault.
  if (synchronous_fault(sig) && info != nullptr && info->si_code > 0) return;
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, sig);
  sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  raise(sig);
}

// Runs the previous disposition as the kernel would have. `kernels`: info
// is the kernel's (else it is never read, only passed on).
void chain(int sig, siginfo_t* info, void* ucontext, bool kernels) {
  const struct sigaction prev = g_previous[sig];
  if (!(prev.sa_flags & SA_SIGINFO)) {
    if (prev.sa_handler == SIG_IGN) return;
    if (prev.sa_handler == SIG_DFL) {
      die_by_default(sig, kernels ? info : nullptr);
      return;
    }
  }
  if (prev.sa_flags & SA_RESETHAND) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
    g_previous[sig].sa_handler = SIG_DFL;
    g_previous[sig].sa_flags &= ~SA_SIGINFO;
  }
  sigset_t during, old;
  std::memcpy(&during, &prev.sa_mask, sizeof(during));
  sigprocmask(SIG_BLOCK, &during, &old);
  if (prev.sa_flags & SA_NODEFER) {  // e.g. faulthandler re-raises from its handler
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, nullptr);
  }
  if (prev.sa_flags & SA_SIGINFO) {
    prev.sa_sigaction(sig, info, ucontext);
  } else {
    prev.sa_handler(sig);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

void on_signal(int sig, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  if (sig > 0 && sig < kMaxSignal && g_ours[sig]) {
    struct sigaction installed {};
    sigaction(sig, nullptr, &installed);  // async-signal-safe
    const proto::CrashSiginfoDoubt doubt = siginfo_doubt(sig, info, ucontext, installed);
    const bool kernels = doubt == proto::CrashSiginfoDoubt::kNone;
    // Who brought the signal to us without the kernel's siginfo: the handler
    // installed after ours, else the code we return to (the address of the
    // call, for the name of the function that holds it).
    uintptr_t caller = 0;
    if (!kernels) {
      const uintptr_t handler = handler_address(installed);
      const auto ours = reinterpret_cast<uintptr_t>(&on_signal);
      const uintptr_t seen = g_replaced_by[sig].load(std::memory_order_relaxed);
      caller = handler > 1 && handler != ours ? handler
               : seen != 0                    ? seen
                           : reinterpret_cast<uintptr_t>(__builtin_return_address(0)) - 1;
    }
    maybe_report(sig, kernels ? info : nullptr, kernels ? ucontext : nullptr, caller, doubt);
    // Passed on as they came: a handler before ours gets what we got.
    chain(sig, info, ucontext, kernels);
  }
  errno = saved_errno;
}

// A stack overflow can only be reported from an alternate stack. Set one for
// the initialising thread unless it has one (Python's faulthandler sets its
// own); other threads run the handler on their own stack.
void ensure_alt_stack() {
  stack_t current{};
  if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_DISABLE)) return;
  void* mem = mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED) return;
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = kAltStackBytes;
  if (sigaltstack(&ss, nullptr) != 0) munmap(mem, kAltStackBytes);
}

void prepare_paths(const CrashConfig& config) {
  const ssize_t n = readlink("/proc/self/exe", g_exe_path, sizeof(g_exe_path) - 1);
  g_exe_path[n > 0 ? n : 0] = '\0';
  char cwd[400];
  const char* dir = config.crash_dir;
  if (dir == nullptr || dir[0] == '\0') dir = getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : ".";
  std::snprintf(g_text_path, sizeof(g_text_path), "%s/xpu_timer_crash-rank%d-%d.txt", dir,
                g_rank, static_cast<int>(g_pid));
}

}  // namespace

bool install_crash_handlers(const CrashConfig& config) {
  if (g_installed.exchange(true)) return true;
  g_rank = config.rank;
  g_wait_ms = config.wait_ms;
  g_pid = getpid();
  g_link_fd.store(config.link_fd, std::memory_order_release);
  prepare_paths(config);
  ensure_alt_stack();
  int installed = 0;
  for (int sig : kSignals) {
    struct sigaction prev {};
    if (sigaction(sig, nullptr, &prev) != 0) continue;
    // Ignored on purpose (Python ignores SIGPIPE): nothing will happen, nothing to report.
    if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN) continue;
    g_previous[sig] = prev;
    struct sigaction ours {};
    ours.sa_sigaction = &on_signal;
    sigemptyset(&ours.sa_mask);
    // SA_RESTART is the previous handler's choice: interrupted system calls
    // behave as they did without us.
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | (prev.sa_flags & SA_RESTART);
    g_ours[sig] = true;
    if (sigaction(sig, &ours, nullptr) != 0) {
      g_ours[sig] = false;
      XPU_TIMER_LOG_WARN("sigaction(%d) failed: %s; that signal is not reported", sig,
                         std::strerror(errno));
      continue;
    }
    ++installed;
  }
  XPU_TIMER_LOG_DEBUG("crash handlers installed for %d signals", installed);
  return installed > 0;
}

void crash_watch_handlers() {
  if (!g_installed.load(std::memory_order_acquire)) return;
  const auto ours = reinterpret_cast<uintptr_t>(&on_signal);
  for (int sig : kSignals) {
    if (!g_ours[sig]) continue;
    struct sigaction cur {};
    if (sigaction(sig, nullptr, &cur) != 0) continue;
    const uintptr_t handler = handler_address(cur);
    if (handler == ours && !(cur.sa_flags & SA_SIGINFO)) {
      // Ours, put back without SA_SIGINFO (code that saves a handler and
      // restores it with signal() does that): the kernel would fill no
      // siginfo for it. Registered again as we made it, unless somebody
      // installed another one in between.
      struct sigaction again = cur;
      again.sa_sigaction = &on_signal;
      again.sa_flags |= SA_SIGINFO | SA_ONSTACK;
      struct sigaction was {};
      if (sigaction(sig, &again, &was) != 0) continue;
      if ((was.sa_flags & SA_SIGINFO) || reinterpret_cast<uintptr_t>(was.sa_handler) != ours) {
        sigaction(sig, &was, nullptr);  // not ours any more: theirs stays
        continue;
      }
      XPU_TIMER_LOG_INFO(
          "%s: our handler had been put back without SA_SIGINFO (its sender "
          "would be unknown); registered again with it",
          crash_signal_name(sig));
      continue;
    }
    if (handler <= 1 || handler == ours) continue;  // ours, or a default the program chose
    if (g_replaced_by[sig].exchange(handler, std::memory_order_relaxed) == handler) continue;
    Dl_info where{};
    const bool named = dladdr(reinterpret_cast<void*>(handler), &where) != 0;
    XPU_TIMER_LOG_INFO(
        "%s is handled first by %s+%#lx in %s (installed after ours%s): a signal that reaches "
        "ours through it may come without its sender",
        crash_signal_name(sig),
        named && where.dli_sname != nullptr ? where.dli_sname : "a function",
        static_cast<unsigned long>(
            handler - reinterpret_cast<uintptr_t>(named && where.dli_sname != nullptr
                                                      ? where.dli_saddr
                                                      : (named ? where.dli_fbase : nullptr))),
        named && where.dli_fname != nullptr ? where.dli_fname : "?",
        (cur.sa_flags & SA_SIGINFO) ? "" : ", without SA_SIGINFO");
  }
}

void crash_set_link_fd(int fd) { g_link_fd.store(fd, std::memory_order_release); }

void crash_forget_process() {
  g_forgotten.store(true, std::memory_order_relaxed);
  g_link_fd.store(-1, std::memory_order_relaxed);
}

}  // namespace xpu_timer::inject
