// Several xpu_timer_sim_launch processes as the nodes of one job
// (--nnodes K --node-rank R): torchrun's environment per node, the sim
// trainers' collectives spanning every node, a hang on one node blocking the
// other, clean-up by the last launcher only, and the usage errors.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/harness/child_process.h"
#include "tests/simgpu/sim_segments.h"

namespace {

namespace t = xpu_timer::simgpu::testing;
using xpu_timer::testing::Child;
using xpu_timer::testing::file_exists;
using xpu_timer::testing::have_python;
using xpu_timer::testing::python3;
using xpu_timer::testing::wait_until;
using namespace std::chrono_literals;

// Removes what a failed test left in /dev/shm.
struct JobSegments {
  std::string job = t::unique_job_id();
  ~JobSegments() { t::remove_segments(job); }
};

std::string registry_path(const std::string& job) { return "/dev/shm/xpu_sim_" + job + "_nodes"; }

// Node `node_rank` of a job of two nodes of two ranks each.
std::unique_ptr<Child> launch_node(int node_rank, const std::string& job,
                                   const std::vector<std::string>& program,
                                   const char* node_rank_flag = "--node-rank") {
  std::vector<std::string> argv = {SIM_LAUNCH, "--nproc", "2", "--nnodes", "2"};
  argv.insert(argv.end(), {node_rank_flag, std::to_string(node_rank), "--job-id", job});
  argv.insert(argv.end(), {"--grace-s", "2", "--"});
  argv.insert(argv.end(), program.begin(), program.end());
  return Child::start(argv, {std::string("XPU_TIMER_SIM_LIB_DIR=") + SIM_LIB_DIR});
}

std::vector<std::string> sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

// The trainer behind a shell that first prints the rank's environment.
std::vector<std::string> trainer(bool python, const std::vector<std::string>& flags) {
  std::vector<std::string> argv =
      sh("echo \"up rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE lws=$LOCAL_WORLD_SIZE "
         "group=$GROUP_RANK\"; exec \"$0\" \"$@\"");
  if (python) {
    argv.insert(argv.end(), {python3(), SIM_TRAINER_PY});
  } else {
    argv.push_back(SIM_TRAINER);
  }
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

bool contains(const Child& c, const std::string& needle) {
  return c.output().find(needle) != std::string::npos;
}

class NodesTrainerTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !have_python()) GTEST_SKIP() << "python3 with ctypes is not installed";
  }
  bool python() const { return GetParam(); }
};

TEST_P(NodesTrainerTest, TwoLaunchersRunOneJobOfFourRanks) {
  JobSegments s;
  const std::vector<std::string> flags = {"--steps",  "4",     "--collective",        "allreduce",
                                          "--bytes",  "65536", "--second-comm-bytes", "4096",
                                          "--verbose"};
  auto n0 = launch_node(0, s.job, trainer(python(), flags));
  ASSERT_TRUE(n0);
  ASSERT_TRUE(n0->wait_for_output("up rank=0 local=0 world=4 lws=2 group=0", 20s)) << n0->output();
  ASSERT_TRUE(n0->wait_for_output("up rank=1 local=1 world=4 lws=2 group=0", 20s)) << n0->output();
  // Node 0's ranks are up and inside ncclCommInitRank (they created the
  // world communicator's segment next to the launchers' registry), where
  // they must wait for node 1.
  ASSERT_TRUE(wait_until([&] { return t::count_segments(s.job) >= 2; }, 30s))
      << t::count_segments(s.job) << "\n"
      << n0->output();
  EXPECT_FALSE(n0->wait_for(0ms).has_value()) << n0->output();
  EXPECT_FALSE(contains(*n0, "step 0 done")) << n0->output();

  auto n1 = launch_node(1, s.job, trainer(python(), flags), "--node_rank");
  ASSERT_TRUE(n1);
  ASSERT_EQ(n0->wait_exit_code(60s), 0) << n0->output() << "\n--- node 1:\n" << n1->output();
  ASSERT_EQ(n1->wait_exit_code(60s), 0) << n1->output();
  EXPECT_TRUE(contains(*n1, "up rank=2 local=0 world=4 lws=2 group=1")) << n1->output();
  EXPECT_TRUE(contains(*n1, "up rank=3 local=1 world=4 lws=2 group=1")) << n1->output();
  for (int r = 0; r < 4; ++r) {
    const Child& node = r < 2 ? *n0 : *n1;
    const std::string rank = "rank " + std::to_string(r);
    EXPECT_TRUE(contains(node, rank + " step 3 done")) << node.output();
    EXPECT_TRUE(contains(node, rank + " done")) << node.output();
  }
  EXPECT_FALSE(contains(*n0, "rank 2 ")) << n0->output();
  EXPECT_EQ(t::count_segments(s.job), 0);
}

INSTANTIATE_TEST_SUITE_P(CppAndPython, NodesTrainerTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Python" : "Cpp"; });

TEST(SimLaunchNodes, HungRankOnNodeOneBlocksNodeZeroInTheCollective) {
  JobSegments s;
  const std::vector<std::string> flags = {
      "--steps", "1000", "--hang-rank", "3", "--hang-step", "2", "--step-ms", "1", "--verbose"};
  auto n0 = launch_node(0, s.job, trainer(false, flags));
  auto n1 = launch_node(1, s.job, trainer(false, flags));
  ASSERT_TRUE(n0 && n1);
  ASSERT_TRUE(n1->wait_for_output("rank 3 stuck_in_host_code at step 2", 30s)) << n1->output();
  ASSERT_TRUE(n0->wait_for_output("rank 0 step 1 done", 10s)) << n0->output();
  ASSERT_TRUE(n0->wait_for_output("rank 1 step 1 done", 10s)) << n0->output();
  // Nobody finishes step 2 without rank 3: node 0's ranks and node 1's
  // healthy rank 2 stay blocked in its all-reduce.
  EXPECT_FALSE(n0->wait_for_output("rank 0 step 2 done", 1200ms)) << n0->output();
  EXPECT_FALSE(contains(*n0, "rank 1 step 2 done")) << n0->output();
  EXPECT_FALSE(contains(*n1, "rank 2 step 2 done")) << n1->output();
  EXPECT_FALSE(n0->wait_for(0ms).has_value()) << "node 0 ended: " << n0->output();
  EXPECT_FALSE(n1->wait_for(0ms).has_value()) << "node 1 ended: " << n1->output();
  ASSERT_TRUE(n0->signal(SIGTERM));
  ASSERT_TRUE(n1->signal(SIGTERM));
  EXPECT_EQ(n0->wait_exit_code(10s), 128 + SIGTERM) << n0->output();
  EXPECT_EQ(n1->wait_exit_code(10s), 128 + SIGTERM) << n1->output();
  EXPECT_EQ(t::count_segments(s.job), 0);
}

TEST(SimLaunchNodes, TheLastLauncherToFinishRemovesTheSegments) {
  JobSegments s;
  const std::string touch = "touch /dev/shm/xpu_sim_${XPU_TIMER_SIM_JOB_ID}_r$RANK; ";
  // Node 1's ranks wait for the end of the launcher's stdin.
  auto n1 = launch_node(1, s.job, sh(touch + "echo up-$RANK; read line; exit 0"));
  ASSERT_TRUE(n1);
  ASSERT_TRUE(n1->wait_for_output("up-2", 10s)) << n1->output();
  ASSERT_TRUE(n1->wait_for_output("up-3", 10s)) << n1->output();
  auto n0 = launch_node(0, s.job, sh(touch + "exit 0"));
  ASSERT_TRUE(n0);
  ASSERT_EQ(n0->wait_exit_code(10s), 0) << n0->output();
  // Node 1 still runs: node 0's launcher must have left every segment.
  EXPECT_TRUE(file_exists(registry_path(s.job)));
  EXPECT_EQ(t::count_segments(s.job), 5);  // r0..r3 and the registry
  n1->close_stdin();
  ASSERT_EQ(n1->wait_exit_code(10s), 0) << n1->output();
  EXPECT_EQ(t::count_segments(s.job), 0);
}

TEST(SimLaunchNodes, RefusesASecondLauncherForTheSameNodeOrAnotherShape) {
  JobSegments s;
  auto n0 = launch_node(0, s.job, sh("echo up-$RANK; read line; exit 0"));
  ASSERT_TRUE(n0);
  ASSERT_TRUE(n0->wait_for_output("up-0", 10s)) << n0->output();
  Child twin({SIM_LAUNCH, "--nproc", "2", "--nnodes", "2", "--node-rank", "0", "--job-id", s.job,
              "--", "true"});
  EXPECT_EQ(twin.wait_exit_code(10s), 2) << twin.output();
  EXPECT_EQ(twin.output(), "xpu_timer_sim_launch: node rank 0 of job '" + s.job +
                               "' is already running (launcher pid " + std::to_string(n0->pid()) +
                               ")\n");
  Child other({SIM_LAUNCH, "--nproc", "3", "--nnodes", "2", "--node-rank", "1", "--job-id", s.job,
               "--", "true"});
  EXPECT_EQ(other.wait_exit_code(10s), 2) << other.output();
  EXPECT_EQ(other.output(), "xpu_timer_sim_launch: job '" + s.job +
                                "' runs --nnodes 2 --nproc 2, but this launcher has --nnodes 2 "
                                "--nproc 3\n");
  n0->close_stdin();
  ASSERT_EQ(n0->wait_exit_code(10s), 0) << n0->output();
  EXPECT_EQ(t::count_segments(s.job), 0);
}

TEST(SimLaunchNodes, ARerunAfterKilledLaunchersStartsAfresh) {
  JobSegments s;
  auto killed = launch_node(0, s.job, sh("echo up-$RANK; exec sleep 60"));
  ASSERT_TRUE(killed);
  ASSERT_TRUE(killed->wait_for_output("up-1", 10s)) << killed->output();
  killed->kill_group();  // SIGKILL: the launcher cannot clean up
  ASSERT_TRUE(file_exists(registry_path(s.job)));
  auto rerun = launch_node(0, s.job, sh("echo rank=$RANK"));
  ASSERT_TRUE(rerun);
  ASSERT_EQ(rerun->wait_exit_code(10s), 0) << rerun->output();
  EXPECT_TRUE(contains(*rerun, "rank=1")) << rerun->output();
  EXPECT_EQ(t::count_segments(s.job), 0);
}

TEST(SimLaunchNodes, OneNodeIsTheSingleLauncherOfToday) {
  JobSegments s;
  Child p({SIM_LAUNCH, "--nproc", "2", "--nnodes", "1", "--node_rank", "0", "--job-id", s.job, "--",
           "/bin/sh", "-c",
           "touch /dev/shm/xpu_sim_${XPU_TIMER_SIM_JOB_ID}_r$RANK; "
           "echo \"rank=$RANK world=$WORLD_SIZE lws=$LOCAL_WORLD_SIZE group=$GROUP_RANK\""});
  ASSERT_EQ(p.wait_exit_code(10s), 0) << p.output();
  EXPECT_TRUE(contains(p, "rank=0 world=2 lws=2 group=0")) << p.output();
  EXPECT_TRUE(contains(p, "rank=1 world=2 lws=2 group=0")) << p.output();
  EXPECT_EQ(t::count_segments(s.job), 0);
}

TEST(SimLaunchNodes, UsageErrorsSayWhatWasWrong) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--nproc", "2", "--nnodes", "0", "--job-id", "j"},
       "--nnodes: '0' is not a number of nodes (1 to 1024)"},
      {{"--nproc", "2", "--nnodes", "x", "--job-id", "j"},
       "--nnodes: 'x' is not a number of nodes (1 to 1024)"},
      {{"--nproc", "2", "--nnodes", "2", "--node-rank", "-1", "--job-id", "j"},
       "--node-rank: '-1' is not a node rank (0 to 1023)"},
      {{"--nproc", "2", "--nnodes", "2", "--node-rank", "2", "--job-id", "j"},
       "--node-rank 2 is not below --nnodes 2 (node ranks are 0 to 1)"},
      {{"--nproc", "2", "--node_rank", "1", "--job-id", "j"},
       "--node-rank 1 is not below --nnodes 1 (node ranks are 0 to 0)"},
      {{"--nproc", "2", "--nnodes", "2", "--node-rank", "1"},
       "--nnodes 2 needs --job-id ID, the same for every node's launcher"},
      {{"--nproc", "64", "--nnodes", "17", "--node-rank", "0", "--job-id", "j"},
       "--nnodes 17 of --nproc 64 makes 1088 ranks; the simulated NCCL holds at most 1024"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv = {SIM_LAUNCH};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--", "true"});
    Child p(argv, {"XPU_TIMER_SIM_JOB_ID="});
    EXPECT_EQ(p.wait_exit_code(10s), 2) << message;
    EXPECT_EQ(p.output().rfind("xpu_timer_sim_launch: " + message + "\n", 0), 0u) << message << "\n"
                                                                                  << p.output();
    EXPECT_NE(p.output().find("usage: xpu_timer_sim_launch"), std::string::npos) << p.output();
  }
}

}  // namespace
