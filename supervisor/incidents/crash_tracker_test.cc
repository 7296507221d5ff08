#include "supervisor/incidents/crash_tracker.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include "common/clock.h"

namespace xpu_timer::supervisor {
namespace {

SignalReport waiting_segv(pid_t pid) {
  SignalReport r;
  r.pid = pid;
  r.tid = pid;
  r.rank = 0;
  r.signal = SIGSEGV;
  r.si_code = 1;
  r.awaits_release = true;
  return r;
}

// Runs the io_context until the tracker concluded rank 0's crash.
nlohmann::json run_until_reported(boost::asio::io_context& io, const CrashTracker& t) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (t.crash_json_by_rank().count(0) == 0 && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_one_for(std::chrono::milliseconds(100));
  }
  auto all = t.crash_json_by_rank();
  return all.count(0) != 0 ? all[0] : nlohmann::json();
}

// The rank's end of the release pair: closed by the supervisor (POLLHUP).
bool released(int rank_end) {
  pollfd p{rank_end, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) != 0;
}

TEST(CrashTracker, ACrashIsReportedAndReleasedWhenThePythonReadFails) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd rank_end(pair[0]);
  boost::asio::io_context io;
  std::atomic<int> reads{0};
  // What the forked collector returns when it crashed on a corrupted interpreter.
  CrashTracker t("", nullptr, &io, [&](pid_t pid, const stack::CollectOptions& opt) {
    ++reads;
    EXPECT_FALSE(opt.native);
    EXPECT_TRUE(opt.python);
    EXPECT_LE(opt.child_timeout.count(), CrashStackReader::kReadTimeout.count());
    stack::CollectResult r;
    r.stack.pid = pid;
    r.stack.errors.push_back("stack collector crashed (signal 11); the target was released");
    stack::ThreadStack th;
    th.tid = pid;
    th.name = "python3";
    r.stack.threads.push_back(th);
    return r;
  });
  t.on_signal_report(waiting_segv(4242), {}, UniqueFd(pair[1]));
  const nlohmann::json j = run_until_reported(io, t);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(reads.load(), 1);
  EXPECT_TRUE(released(rank_end.get()));
  EXPECT_EQ(j["summary"],
            "rank 0 (pid 4242) died of SIGSEGV at address 0x0; Python stacks not read: stack "
            "collector crashed (signal 11); the target was released");
  EXPECT_EQ(j["python"]["read"], false);
  EXPECT_TRUE(j["python"]["threads"].empty());
  EXPECT_EQ(t.incidents(), 1u);
}

TEST(CrashTracker, PythonFramesOfTheOtherThreadsComeWithANativeThreadsCrash) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd rank_end(pair[0]);
  boost::asio::io_context io;
  CrashTracker t("", nullptr, &io, [](pid_t pid, const stack::CollectOptions&) {
    stack::CollectResult r;
    r.attached = true;
    r.stack.pid = pid;
    r.stack.python_version = "3.11.2";
    stack::ThreadStack main_thread;
    main_thread.tid = pid;
    main_thread.name = "python3";
    main_thread.holds_gil = false;
    main_thread.python = {{"crash", "/x/sim_trainer.py", 203, true},
                          {"<module>", "/x/sim_trainer.py", 300, true}};
    stack::ThreadStack watchdog;
    watchdog.tid = pid + 1;
    watchdog.name = "sim-watchdog";
    watchdog.holds_gil = false;
    r.stack.threads = {main_thread, watchdog};
    return r;
  });
  SignalReport abort_report = waiting_segv(5000);
  abort_report.tid = 5001;
  abort_report.signal = SIGABRT;
  abort_report.si_code = -6;  // SI_TKILL: abort() raised it (no sender: /proc is not the test's)
  t.on_signal_report(abort_report, {}, UniqueFd(pair[1]));
  const nlohmann::json j = run_until_reported(io, t);
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(released(rank_end.get()));
  EXPECT_EQ(j["summary"],
            "rank 0 (pid 5000) died of SIGABRT, in thread \"sim-watchdog\", "
            "which ran no Python");
  ASSERT_EQ(j["python"]["threads"].size(), 2u);
  EXPECT_EQ(j["python"]["threads"][0]["tid"], 5001);
  EXPECT_EQ(j["python"]["threads"][0]["crashed"], true);
  EXPECT_EQ(j["python"]["threads"][1]["frames"][0]["func"], "crash");
}

TEST(CrashTracker, WithoutAReaderTheRankIsReleasedAtOnce) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd rank_end(pair[0]);
  CrashTracker t("", nullptr);
  t.on_signal_report(waiting_segv(4243), {}, UniqueFd(pair[1]));
  EXPECT_TRUE(released(rank_end.get()));
  EXPECT_TRUE(t.crash_json_by_rank().at(0)["python"].is_null());
}

// A rank killed by SIGKILL under a launcher that reaps it at once (torchrun,
// xpu_timer_sim_launch): its exit is read when its link closes, while it is
// a zombie, and still known when the death is concluded after the reaping.
TEST(CrashTracker, TheExitOfARankItsLauncherReapsIsReadWhenItsLinkCloses) {
  char page[] = "/tmp/crash_tracker_test-XXXXXX";  // left behind: no exit handler ran
  const int page_fd = ::mkstemp(page);
  ASSERT_GE(page_fd, 0);
  ::close(page_fd);
  const pid_t child = ::fork();
  if (child == 0) {
    ::kill(::getpid(), SIGKILL);
    _exit(1);
  }
  ASSERT_GT(child, 0);
  siginfo_t info{};
  // Until it is a zombie, without reaping it (the launcher's part).
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  RankRecord rec;
  rec.reg.pid = child;
  rec.reg.rank = 0;
  rec.reg.status_path = page;
  CrashTracker t("", nullptr);
  t.on_link_closed(rec);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);  // the launcher reaps it
  t.check_deaths({rec});
  ::unlink(page);
  const nlohmann::json j = t.crash_json_by_rank().at(0);
  EXPECT_EQ(j["kind"], "died_without_report");
  EXPECT_EQ(j["exit_status"]["signal"], SIGKILL) << j.dump(2);
  // Never seen alive by a poll: no OOM counter baseline, so no OOM evidence.
  EXPECT_EQ(j["death_cause"], "killed by SIGKILL from outside");
}

// Real torchrun after rank 1 crashed: the other ranks' SIGTERM reached our
// handler through a handler that passed no siginfo. Such a report carries
// no sender, code or address; a stop signal is never a crash: the three
// are terminated after the crash, whichever report is read first, and the
// incident is one.
TEST(CrashTracker, StopSignalsWithoutTheKernelsSiginfoAreTerminationsAfterTheCrash) {
  CrashTracker t("", nullptr);
  const auto sigterm = [](int rank) {
    SignalReport r;
    r.pid = 5000 + rank;
    r.tid = r.pid;
    r.rank = rank;
    r.signal = SIGTERM;
    r.siginfo_from_kernel = false;
    NativeFrame caller;
    caller.function = "late_handler";
    caller.module = "/usr/lib/libother.so";
    r.caller = caller;
    return r;
  };
  t.on_signal_report(sigterm(2), {});  // read before the crash that caused it
  SignalReport segv = waiting_segv(5001);
  segv.rank = 1;
  segv.awaits_release = false;
  t.on_signal_report(segv, {});
  t.on_signal_report(sigterm(0), {});
  t.on_signal_report(sigterm(3), {});
  EXPECT_EQ(t.incidents(), 1u);
  const auto all = t.crash_json_by_rank();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all.at(1)["outcome"], "crashed");
  for (int rank : {0, 2, 3}) {
    const nlohmann::json& j = all.at(rank);
    EXPECT_EQ(j["outcome"], "terminated") << j.dump(2);
    EXPECT_TRUE(j["si_code"].is_null());
    EXPECT_TRUE(j["sender"].is_null());
    EXPECT_TRUE(j["fault_address"].is_null());
    EXPECT_EQ(j["siginfo"],
              "sender unknown: our handler was reached through late_handler (libother.so) "
              "without the kernel's siginfo");
  }
  EXPECT_EQ(all.at(0)["cause"], "ended by SIGTERM after rank 1's crash (SIGSEGV)");
  EXPECT_EQ(all.at(2)["cause"], "ended by SIGTERM (sender unknown)");
  EXPECT_EQ(t.outcomes_by_pid().at(5002), "terminated");
}

// A report's time is the tear-down window's start when it is the root cause:
// one without a time (0) or far from now (broken, forged) takes the time it
// arrived; a plausible one is kept as the rank gave it.
TEST(CrashTracker, AReportWithoutAPlausibleTimeTakesItsArrival) {
  CrashTracker t("", nullptr);
  const double before = unix_now_s();
  SignalReport zero = waiting_segv(6000);
  zero.awaits_release = false;
  zero.time_unix_s = 0;
  t.on_signal_report(zero, {});
  SignalReport future = waiting_segv(6001);
  future.rank = 1;
  future.awaits_release = false;
  future.time_unix_s = before + 3600;
  t.on_signal_report(future, {});
  SignalReport given = waiting_segv(6002);
  given.rank = 2;
  given.awaits_release = false;
  given.time_unix_s = before - 1.5;
  t.on_signal_report(given, {});
  const double after = unix_now_s();
  const auto all = t.crash_json_by_rank();
  ASSERT_EQ(all.size(), 3u);
  for (int rank : {0, 1}) {
    const double at = all.at(rank).at("time").get<double>();
    EXPECT_GE(at, before) << all.at(rank).dump(2);
    EXPECT_LE(at, after) << all.at(rank).dump(2);
  }
  EXPECT_EQ(all.at(2).at("time").get<double>(), before - 1.5);
}

}  // namespace
}  // namespace xpu_timer::supervisor
