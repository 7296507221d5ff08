// The crash handler in a forked child: it reports on the link (a socketpair)
// or to its text file, names the crashing function, and still runs a handler
// the program installed before it, dying with the same status as without it.
#include "inject/crash_handlers.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/rank_messages.h"

// Exported (ENABLE_EXPORTS) so the handler finds them in .dynsym.
// Not a constant: the compiler may not drop the store as undefined behaviour.
volatile uintptr_t g_bad_address = 0;
extern "C" __attribute__((noinline)) void xpu_test_crash_segv() {
  *reinterpret_cast<volatile int*>(g_bad_address) = 1;
}
extern "C" __attribute__((noinline)) void xpu_test_crash_abort() { abort(); }

namespace xpu_timer::inject {
namespace {

int g_marker_fd = -1;
void program_handler(int sig) {
  const char msg[] = "program handler ran\n";
  ssize_t ignored = write(g_marker_fd, msg, sizeof(msg) - 1);
  (void)ignored;
  signal(sig, SIG_DFL);  // then die as the program wanted
  raise(sig);
}

struct ChildResult {
  int wait_status = 0;
  proto::CrashReportMsg report{};  // as proto::decode_crash_report read it
  ssize_t report_bytes = 0;
  std::string decode_error;  // empty when the report decoded (or none came)
  std::string marker;
};

// Forks; the child optionally installs `program_handler` first, then ours,
// then runs `crash`.
ChildResult run_child(void (*crash)(), bool program_handler_first, int sig_of_program,
                      const std::string& crash_dir = "") {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  int marker[2];
  EXPECT_EQ(pipe2(marker, O_CLOEXEC), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    close(marker[0]);
    g_marker_fd = marker[1];
    if (program_handler_first) signal(sig_of_program, program_handler);
    CrashConfig config;
    config.rank = 7;
    config.link_fd = crash_dir.empty() ? sv[1] : -1;
    config.crash_dir = crash_dir.c_str();
    if (!install_crash_handlers(config)) _exit(99);
    crash();
    _exit(98);
  }
  close(sv[1]);
  close(marker[1]);
  ChildResult r;
  waitpid(pid, &r.wait_status, 0);
  std::vector<char> packet(proto::kMaxMessageBytes);
  r.report_bytes = recv(sv[0], packet.data(), packet.size(), MSG_DONTWAIT);
  if (r.report_bytes > 0) {
    proto::decode_crash_report(packet.data(), static_cast<size_t>(r.report_bytes), &r.report,
                               &r.decode_error);
  }
  char buf[256];
  ssize_t n;
  while ((n = read(marker[0], buf, sizeof(buf))) > 0) r.marker.append(buf, static_cast<size_t>(n));
  close(sv[0]);
  close(marker[0]);
  return r;
}

bool has_frame(const proto::CrashReportMsg& m, const char* name) {
  for (uint32_t i = 0; i < m.nframes; ++i) {
    if (std::strcmp(m.frames[i].function, name) == 0) return true;
  }
  return false;
}

TEST(CrashHandlers, SegvIsReportedWithTheCrashingFunctionAndDiesBySigsegv) {
  const ChildResult r = run_child(&xpu_test_crash_segv, false, 0);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGSEGV);
  ASSERT_EQ(r.report_bytes, static_cast<ssize_t>(sizeof(proto::CrashReportMsg)));
  ASSERT_EQ(r.decode_error, "");
  EXPECT_EQ(r.report.signal, SIGSEGV);
  EXPECT_EQ(r.report.rank, 7);
  EXPECT_EQ(r.report.fault_addr, 0u);
  ASSERT_GT(r.report.nframes, 1u);
  // The innermost frame is the faulting function itself, not our handler.
  EXPECT_STREQ(r.report.frames[0].function, "xpu_test_crash_segv");
  EXPECT_GE(r.report.frames[0].module, 0);
}

TEST(CrashHandlers, AbortIsReportedAndDiesBySigabrt) {
  const ChildResult r = run_child(&xpu_test_crash_abort, false, 0);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGABRT);
  ASSERT_EQ(r.report_bytes, static_cast<ssize_t>(sizeof(proto::CrashReportMsg)));
  EXPECT_EQ(r.report.signal, SIGABRT);
  EXPECT_TRUE(has_frame(r.report, "abort"));
  EXPECT_TRUE(has_frame(r.report, "xpu_test_crash_abort"));
}

TEST(CrashHandlers, AHandlerInstalledBeforeOursStillRuns) {
  const ChildResult r = run_child(&xpu_test_crash_segv, true, SIGSEGV);
  EXPECT_EQ(r.marker, "program handler ran\n");
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGSEGV);
  ASSERT_EQ(r.report_bytes, static_cast<ssize_t>(sizeof(proto::CrashReportMsg)));
  EXPECT_TRUE(has_frame(r.report, "xpu_test_crash_segv"));
}

void terminate_self() { kill(getpid(), SIGTERM); pause(); }

TEST(CrashHandlers, SigtermHandledByTheProgramIsNotReported) {
  const ChildResult r = run_child(&terminate_self, true, SIGTERM);
  EXPECT_EQ(r.marker, "program handler ran\n");
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGTERM);
  EXPECT_LE(r.report_bytes, 0);  // EOF: nothing was sent
}

TEST(CrashHandlers, SigtermWithDefaultActionIsReportedWithItsSender) {
  const ChildResult r = run_child(&terminate_self, false, 0);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGTERM);
  ASSERT_EQ(r.report_bytes, static_cast<ssize_t>(sizeof(proto::CrashReportMsg)));
  EXPECT_EQ(r.report.signal, SIGTERM);
  EXPECT_EQ(r.report.sender_pid, r.report.pid);
}

// Handlers installed after ours that chain to it. One calls it as if it were
// an sa_handler(sig): our handler gets whatever the registers held, here a
// forged siginfo that looks like what a real run reported (a sender pid and
// code no kernel gave). The other passes the kernel's siginfo on.
struct sigaction g_ours_action;
siginfo_t g_forged;
ucontext_t g_forged_context;
volatile int g_after_chain = 0;
extern "C" __attribute__((noinline)) void xpu_test_late_handler(int sig) {
  g_forged.si_signo = sig;
  g_forged.si_code = -1886906387;
  g_forged.si_pid = 1712499808;
  reinterpret_cast<void (*)(int, siginfo_t*, void*)>(g_ours_action.sa_sigaction)(sig, &g_forged,
                                                                                 &g_forged_context);
  g_after_chain = 1;  // no tail call: the caller stays on the stack
}
extern "C" __attribute__((noinline)) void xpu_test_late_siginfo_handler(int sig, siginfo_t* info,
                                                                        void* uc) {
  g_ours_action.sa_sigaction(sig, info, uc);
  g_after_chain = 1;
}

enum class Late { kOneArgument, kSiginfo, kForwardsRegisters, kRestoresOursAndForwards };

// What the real run's reports look like from inside: a one-argument handler
// that puts ours back, then hands on the frame's siginfo, which the kernel
// did not fill for it (here filled with the garbage a real run reported).
extern "C" __attribute__((noinline)) void xpu_test_restoring_handler(int sig, siginfo_t* info,
                                                                     void* uc) {
  sigaction(sig, &g_ours_action, nullptr);
  info->si_signo = sig;
  info->si_code = -1886906387;
  info->si_pid = 1712499808;
  g_ours_action.sa_sigaction(sig, info, uc);
  g_after_chain = 1;
}

// What a real run showed (PyTorch's termination handler, installed after ours
// without SA_SIGINFO): the kernel enters it with the frame's pointers in its
// argument registers but fills no siginfo, and it hands those on to ours.
extern "C" __attribute__((noinline)) void xpu_test_late_forwarding_handler(int sig,
                                                                          siginfo_t* info,
                                                                          void* uc) {
  g_ours_action.sa_sigaction(sig, info, uc);
  g_after_chain = 1;
}

void install_late(Late kind) {
  sigaction(SIGTERM, nullptr, &g_ours_action);
  struct sigaction late {};
  sigemptyset(&late.sa_mask);
  switch (kind) {
    case Late::kSiginfo:
      late.sa_sigaction = &xpu_test_late_siginfo_handler;
      late.sa_flags = SA_SIGINFO;
      break;
    case Late::kOneArgument:
      late.sa_handler = &xpu_test_late_handler;
      break;
    case Late::kForwardsRegisters:
      // Through void (*)(): the one cast GCC takes for "any function type".
      late.sa_handler = reinterpret_cast<void (*)(int)>(
          reinterpret_cast<void (*)()>(&xpu_test_late_forwarding_handler));
      break;
    case Late::kRestoresOursAndForwards:
      late.sa_handler = reinterpret_cast<void (*)(int)>(
          reinterpret_cast<void (*)()>(&xpu_test_restoring_handler));
      break;
  }
  sigaction(SIGTERM, &late, nullptr);
  crash_watch_handlers();  // the runtime's thread would, within a second
}
void terminate_through_a_restoring_handler() {
  install_late(Late::kRestoresOursAndForwards);
  terminate_self();
}
void terminate_through_a_one_argument_handler() {
  install_late(Late::kOneArgument);
  terminate_self();
}
void terminate_through_a_siginfo_handler() {
  install_late(Late::kSiginfo);
  terminate_self();
}
void terminate_through_a_forwarding_handler() {
  install_late(Late::kForwardsRegisters);
  terminate_self();
}

TEST(CrashHandlers, ASiginfoThatIsNotTheKernelsIsNeverReported) {
  const ChildResult r = run_child(&terminate_through_a_one_argument_handler, false, 0);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGTERM);
  ASSERT_EQ(r.report_bytes, static_cast<ssize_t>(sizeof(proto::CrashReportMsg)));
  EXPECT_EQ(r.report.signal, SIGTERM);
  EXPECT_NE(r.report.flags & proto::kCrashFlagSiginfoNotKernels, 0u);
  EXPECT_EQ(r.report.si_code, 0);
  EXPECT_EQ(r.report.sender_pid, 0);
  EXPECT_EQ(r.report.fault_addr, 0u);
  // Who called ours, and the stack from the kernel's signal frame down.
  EXPECT_STREQ(r.report.caller.function, "xpu_test_late_handler");
  EXPECT_GE(r.report.caller.module, 0);
  EXPECT_TRUE(has_frame(r.report, "terminate_self") || has_frame(r.report, "kill") ||
              has_frame(r.report, "pause"));
}

TEST(CrashHandlers, TheFramesUnfilledSiginfoHandedOnByAOneArgumentHandlerIsNeverReported) {
  const ChildResult r = run_child(&terminate_through_a_forwarding_handler, false, 0);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGTERM);
  ASSERT_EQ(r.report_bytes, static_cast<ssize_t>(sizeof(proto::CrashReportMsg)));
  EXPECT_NE(r.report.flags & proto::kCrashFlagSiginfoNotKernels, 0u);
  EXPECT_EQ(r.report.sender_pid, 0);
  EXPECT_STREQ(r.report.caller.function, "xpu_test_late_forwarding_handler");
}

TEST(CrashHandlers, AHandlerThatPutsOursBackAndForwardsGarbageIsNamedAndNotBelieved) {
  const ChildResult r = run_child(&terminate_through_a_restoring_handler, false, 0);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGTERM);
  ASSERT_EQ(r.report_bytes, static_cast<ssize_t>(sizeof(proto::CrashReportMsg)));
  EXPECT_NE(r.report.flags & proto::kCrashFlagSiginfoNotKernels, 0u);
  EXPECT_EQ(r.report.si_code, 0);
  EXPECT_EQ(r.report.sender_pid, 0);
  EXPECT_STREQ(r.report.caller.function, "xpu_test_restoring_handler");
}

// Code that saved our handler and put it back with signal() drops
// SA_SIGINFO: the kernel then fills no siginfo for it. Seen by the report
// (doubt: no SA_SIGINFO), and undone by the watch, after which the sender is
// known again.
void put_ours_back_with_signal() {
  struct sigaction cur {};
  sigaction(SIGTERM, nullptr, &cur);
  signal(SIGTERM, reinterpret_cast<void (*)(int)>(reinterpret_cast<void (*)()>(cur.sa_sigaction)));
}
void terminate_after_ours_was_put_back() {
  put_ours_back_with_signal();
  terminate_self();
}
void terminate_after_the_watch_repaired_ours() {
  put_ours_back_with_signal();
  crash_watch_handlers();
  terminate_self();
}

TEST(CrashHandlers, OursPutBackWithoutSaSiginfoIsDoubtedThenRegisteredAgain) {
  ChildResult r = run_child(&terminate_after_ours_was_put_back, false, 0);
  ASSERT_EQ(r.report_bytes, static_cast<ssize_t>(sizeof(proto::CrashReportMsg)));
  EXPECT_NE(r.report.flags & proto::kCrashFlagSiginfoNotKernels, 0u);
  EXPECT_EQ(r.report.siginfo_doubt, static_cast<uint32_t>(proto::CrashSiginfoDoubt::kNoSaSiginfo));
  EXPECT_EQ(r.report.sender_pid, 0);
  r = run_child(&terminate_after_the_watch_repaired_ours, false, 0);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGTERM);
  ASSERT_EQ(r.report_bytes, static_cast<ssize_t>(sizeof(proto::CrashReportMsg)));
  EXPECT_EQ(r.report.flags & proto::kCrashFlagSiginfoNotKernels, 0u);
  EXPECT_EQ(r.report.sender_pid, r.report.pid);
}

TEST(CrashHandlers, ASiginfoPassedOnByALaterHandlerIsTheKernels) {
  const ChildResult r = run_child(&terminate_through_a_siginfo_handler, false, 0);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGTERM);
  ASSERT_EQ(r.report_bytes, static_cast<ssize_t>(sizeof(proto::CrashReportMsg)));
  EXPECT_EQ(r.report.flags & proto::kCrashFlagSiginfoNotKernels, 0u);
  EXPECT_EQ(r.report.si_code, SI_USER);
  EXPECT_EQ(r.report.sender_pid, r.report.pid);
  EXPECT_EQ(r.report.caller.pc, 0u);
}

TEST(CrashHandlers, WithoutASupervisorTheReportIsATextFile) {
  char tmpl[] = "/tmp/xpu_crash_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const ChildResult r = run_child(&xpu_test_crash_segv, false, 0, tmpl);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGSEGV);
  std::string found;
  for (const auto& entry : std::filesystem::directory_iterator(tmpl)) {
    found = entry.path().filename().string();
  }
  ASSERT_EQ(found.rfind("xpu_timer_crash-rank7-", 0), 0u) << found;
  std::ifstream f(std::string(tmpl) + "/" + found);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find("signal 11 (SIGSEGV)"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("xpu_test_crash_segv"), std::string::npos) << text.str();
}

// A rank whose supervisor is gone (no link, or a link nobody reads) and that
// is stopped by the launcher's SIGTERM has not crashed: it writes no file
// into the job's working directory, and still dies by SIGTERM.
TEST(CrashHandlers, WithoutASupervisorATerminationRequestWritesNoFile) {
  char tmpl[] = "/tmp/xpu_crash_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const ChildResult r = run_child(&terminate_self, false, 0, tmpl);
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << "wait status " << r.wait_status;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGTERM);
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(tmpl)) {
    files.push_back(entry.path().filename().string());
  }
  EXPECT_TRUE(files.empty()) << files.front();
  std::filesystem::remove_all(tmpl);
}

// A child whose handler waits up to `wait_ms` for the release; the test
// plays the supervisor on the other end of the link.
struct WaitingChild {
  pid_t pid = -1;
  int link = -1;  // our end
};

WaitingChild start_waiting_child(void (*crash)(), int wait_ms) {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    CrashConfig config;
    config.rank = 3;
    config.link_fd = sv[1];
    config.wait_ms = wait_ms;
    if (!install_crash_handlers(config)) _exit(99);
    crash();
    _exit(98);
  }
  close(sv[1]);
  return WaitingChild{pid, sv[0]};
}

// Receives the report (blocking) and the descriptor it carries (-1: none).
proto::CrashReportMsg receive_report(int link, int* passed) {
  std::vector<char> packet(proto::kMaxMessageBytes);
  iovec iov{packet.data(), packet.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  h.msg_control = control;
  h.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(link, &h, MSG_CMSG_CLOEXEC);
  *passed = -1;
  for (cmsghdr* c = n > 0 ? CMSG_FIRSTHDR(&h) : nullptr; c; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      std::memcpy(passed, CMSG_DATA(c), sizeof(int));
    }
  }
  proto::CrashReportMsg m{};
  std::string error;
  EXPECT_TRUE(n > 0 &&
              proto::decode_crash_report(packet.data(), static_cast<size_t>(n), &m, &error))
      << error;
  return m;
}

double seconds_since(const timespec& t0) {
  timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return static_cast<double>(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

TEST(CrashHandlers, ACrashWaitsInItsHandlerUntilTheSupervisorReleasesIt) {
  // A bound far beyond the test: the child must die because we released it.
  const WaitingChild c = start_waiting_child(&xpu_test_crash_segv, 60000);
  int release = -1;
  const proto::CrashReportMsg m = receive_report(c.link, &release);
  EXPECT_EQ(m.signal, SIGSEGV);
  EXPECT_NE(m.flags & proto::kCrashFlagAwaitsRelease, 0u);
  ASSERT_GE(release, 0);
  int status = 0;
  EXPECT_EQ(waitpid(c.pid, &status, WNOHANG), 0) << "died before it was released";
  close(release);
  ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "wait status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);  // as it would have died without us
  close(c.link);
}

TEST(CrashHandlers, ACrashNobodyReleasesDiesAtItsBound) {
  timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const WaitingChild c = start_waiting_child(&xpu_test_crash_abort, 300);
  int release = -1;
  const proto::CrashReportMsg m = receive_report(c.link, &release);
  EXPECT_EQ(m.signal, SIGABRT);
  ASSERT_GE(release, 0);  // held open: a supervisor stuck in its read
  int status = 0;
  ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "wait status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  // The handler's deadline is 300 ms on CLOCK_MONOTONIC after the report,
  // which came after the fork.
  EXPECT_GE(seconds_since(t0), 0.3);
  close(release);
  close(c.link);
}

TEST(CrashHandlers, ATerminationRequestNeverWaits) {
  const WaitingChild c = start_waiting_child(&terminate_self, 60000);
  int release = -1;
  const proto::CrashReportMsg m = receive_report(c.link, &release);
  EXPECT_EQ(m.signal, SIGTERM);
  EXPECT_EQ(m.flags & proto::kCrashFlagAwaitsRelease, 0u);
  EXPECT_EQ(release, -1);
  int status = 0;
  ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "wait status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  close(c.link);
}

}  // namespace
}  // namespace xpu_timer::inject
