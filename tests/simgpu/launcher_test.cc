// xpu_timer_sim_launch: torchrun's environment, exit codes, signal deaths,
// SIGTERM forwarding, SIGKILL after the grace period, segment clean-up.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <string>

#include "tests/harness/child_process.h"
#include "tests/simgpu/sim_segments.h"

namespace {

namespace t = xpu_timer::simgpu::testing;
using xpu_timer::testing::Child;
using namespace std::chrono_literals;

std::unique_ptr<Child> launch(int nproc, const std::string& script,
                                       const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {SIM_LAUNCH, "--nproc", std::to_string(nproc)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
  return Child::start(argv);
}

TEST(SimLaunch, SetsTorchrunEnvironmentAndExitsZero) {
  const std::string job = t::unique_job_id();
  auto p = launch(2,
                  "echo \"rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE lws=$LOCAL_WORLD_SIZE "
                  "group=$GROUP_RANK job=$XPU_TIMER_SIM_JOB_ID\"",
                  {"--job-id", job});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(10s), 0) << p->output();
  for (int r = 0; r < 2; ++r) {
    const std::string want = "rank=" + std::to_string(r) + " local=" + std::to_string(r) +
                             " world=2 lws=2 group=0 job=" + job;
    EXPECT_NE(p->output().find(want), std::string::npos) << p->output();
  }
}

TEST(SimLaunch, PropagatesAFailedRanksExitCodeAndStopsTheOthers) {
  auto p = launch(3, "if [ \"$RANK\" = 1 ]; then exit 3; fi; exec sleep 30");
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(10s), 3) << p->output();
  EXPECT_NE(p->output().find("rank 1 (pid "), std::string::npos) << p->output();
  EXPECT_NE(p->output().find("exited with code 3"), std::string::npos) << p->output();
}

TEST(SimLaunch, ReportsASignalDeathAs128PlusSignal) {
  auto p = launch(2, "if [ \"$RANK\" = 0 ]; then kill -SEGV $$; fi; exec sleep 30");
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(10s), 128 + SIGSEGV) << p->output();
  EXPECT_NE(p->output().find("rank 0 (pid "), std::string::npos) << p->output();
  EXPECT_NE(p->output().find("was killed by signal SIGSEGV (11)"), std::string::npos)
      << p->output();
}

TEST(SimLaunch, ForwardsSigtermToEveryRank) {
  auto p = launch(2,
                  "trap 'echo term-$RANK; exit 7' TERM; echo ready-$RANK; "
                  "while :; do sleep 0.05; done");
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->wait_for_output("ready-0", 10s)) << p->output();
  ASSERT_TRUE(p->wait_for_output("ready-1", 10s)) << p->output();
  ASSERT_TRUE(p->signal(SIGTERM));
  ASSERT_EQ(p->wait_exit_code(10s), 128 + SIGTERM) << p->output();
  EXPECT_NE(p->output().find("term-0"), std::string::npos) << p->output();
  EXPECT_NE(p->output().find("term-1"), std::string::npos) << p->output();
}

TEST(SimLaunch, KillsRanksThatIgnoreSigtermAfterTheGracePeriod) {
  auto p = launch(2, "trap '' TERM; echo ready-$RANK; while :; do sleep 0.05; done",
                  {"--grace-s", "0.5"});
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->wait_for_output("ready-0", 10s)) << p->output();
  ASSERT_TRUE(p->wait_for_output("ready-1", 10s)) << p->output();
  ASSERT_TRUE(p->signal(SIGTERM));
  ASSERT_EQ(p->wait_exit_code(10s), 128 + SIGTERM) << p->output();
  EXPECT_NE(p->output().find("sending SIGKILL"), std::string::npos) << p->output();
}

TEST(SimLaunch, RemovesTheJobsSharedMemorySegments) {
  const std::string job = t::unique_job_id();
  auto p = launch(2, "touch /dev/shm/xpu_sim_${XPU_TIMER_SIM_JOB_ID}_r$RANK", {"--job-id", job});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(10s), 0) << p->output();
  EXPECT_EQ(t::count_segments(job), 0);
  t::remove_segments(job);
}

TEST(SimLaunch, RejectsBadUsage) {
  Child p({SIM_LAUNCH, "--nproc", "0", "--", "true"});
  EXPECT_EQ(p.wait_exit_code(10s), 2) << p.output();
  Child q({SIM_LAUNCH, "--nproc", "1", "--job-id", "a/b", "--", "true"});
  EXPECT_EQ(q.wait_exit_code(10s), 2) << q.output();
}

}  // namespace
