// The two sim trainers under the launcher: normal runs, a hung rank that
// leaves the others blocked in the collective, crashes and exit codes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "tests/harness/child_process.h"

namespace {

using xpu_timer::testing::Child;
using xpu_timer::testing::have_python;
using xpu_timer::testing::python3;
using namespace std::chrono_literals;

std::vector<std::string> trainer_cmd(bool python) {
  if (python) return {python3(), SIM_TRAINER_PY};
  return {SIM_TRAINER};
}

std::unique_ptr<Child> launch_trainer(bool python, int nproc,
                                      const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {SIM_LAUNCH,  "--nproc", std::to_string(nproc),
                                   "--grace-s", "2",       "--"};
  for (const auto& a : trainer_cmd(python)) argv.push_back(a);
  argv.insert(argv.end(), flags.begin(), flags.end());
  return Child::start(argv, {std::string("XPU_TIMER_SIM_LIB_DIR=") + SIM_LIB_DIR});
}

class TrainerTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !have_python()) GTEST_SKIP() << "python3 with ctypes is not installed";
  }
  bool python() const { return GetParam(); }
};

TEST_P(TrainerTest, TwoRanksRunEveryGemmApiAndFinish) {
  auto p =
      launch_trainer(python(), 2,
                     {"--steps", "4", "--gemm-api", "all", "--gemm", "512,512,512", "--collective",
                      "allgather", "--bytes", "4096", "--jitter-ms", "2", "--verbose"});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(30s), 0) << p->output();
  EXPECT_NE(p->output().find("rank 0 step 3 done"), std::string::npos) << p->output();
  EXPECT_NE(p->output().find("rank 0 done"), std::string::npos) << p->output();
  EXPECT_NE(p->output().find("rank 1 done"), std::string::npos) << p->output();
}

// The flags reach the simulated libraries of the named rank only: it alone
// says, once, that its factor is on (slow_rank_test.cc checks the times).
TEST_P(TrainerTest, SlowRankFlagsReachTheSimulatedLibraries) {
  auto p = launch_trainer(python(), 2,
                          {"--steps", "2", "--slow-gpu-rank", "1", "--slow-gpu-factor", "3",
                           "--slow-link-rank", "0", "--slow-link-factor", "2.5"});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(30s), 0) << p->output();
  const std::string out = p->output();
  for (const char* line : {"simgpu: rank 1: kernels take 3x their simulated time",
                           "simgpu: rank 0: transfers take 2.5x their simulated time"}) {
    const size_t at = out.find(line);
    EXPECT_NE(at, std::string::npos) << line << "\n" << out;
    EXPECT_EQ(out.find(line, at + 1), std::string::npos) << "twice: " << line << "\n" << out;
  }
}

TEST_P(TrainerTest, HungRankLeavesTheOthersBlockedInTheCollective) {
  auto p = launch_trainer(
      python(), 2,
      {"--steps", "1000", "--hang-rank", "1", "--hang-step", "2", "--step-ms", "1", "--verbose"});
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->wait_for_output("rank 1 stuck_in_host_code at step 2", 20s)) << p->output();
  ASSERT_TRUE(p->wait_for_output("rank 0 step 1 done", 10s)) << p->output();
  // Rank 0 cannot finish step 2 without rank 1: it must stay blocked.
  EXPECT_FALSE(p->wait_for_output("rank 0 step 2 done", 1200ms)) << p->output();
  EXPECT_FALSE(p->wait_for(0ms).has_value()) << "job ended: " << p->output();
  ASSERT_TRUE(p->signal(SIGTERM));
  ASSERT_EQ(p->wait_exit_code(10s), 128 + SIGTERM) << p->output();
}

// --mismatch-file (the C++ trainer's; a benchmark's trigger): the rank
// issues its odd collective once, at the first step that finds the file.
TEST(SimTrainer, AMismatchFileMakesTheRankDisagreeOnce) {
  char dir[] = "/tmp/sim-mismatch-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/now";
  auto p = launch_trainer(false, 2,
                          {"--steps", "100000", "--step-ms", "5", "--mismatch-rank", "1",
                           "--mismatch-file", file, "--verbose"});
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->wait_for_output("rank 0 step 3 done", 20s)) << p->output();
  const std::string said = "rank 1 issues a mismatching collective (op) at step ";
  EXPECT_EQ(p->output().find(said), std::string::npos) << p->output();
  std::ofstream(file) << "now\n";
  ASSERT_TRUE(p->wait_for_output(said, 20s)) << p->output();
  const std::string out = p->output();
  const int step = std::stoi(out.substr(out.find(said) + said.size()));
  // Twenty steps later, still once.
  ASSERT_TRUE(p->wait_for_output("rank 0 step " + std::to_string(step + 20) + " done", 20s))
      << p->output();
  EXPECT_EQ(p->output().find(said, p->output().find(said) + 1), std::string::npos) << p->output();
  ASSERT_TRUE(p->signal(SIGTERM));
  p->wait_exit_code(10s);
  ::unlink(file.c_str());
  ::rmdir(dir);
}

TEST_P(TrainerTest, ExitCodeFlagIsPropagated) {
  auto p = launch_trainer(python(), 2, {"--steps", "2", "--exit-code", "3"});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(30s), 3) << p->output();
}

TEST_P(TrainerTest, SegfaultingRankFailsTheJob) {
  auto p = launch_trainer(
      python(), 2,
      {"--steps", "10", "--crash-rank", "1", "--crash-step", "1", "--crash-kind", "segv"});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(30s), 128 + SIGSEGV) << p->output();
  EXPECT_NE(p->output().find("rank 1 (pid "), std::string::npos) << p->output();
}

TEST_P(TrainerTest, AbortingRankFailsTheJob) {
  auto p = launch_trainer(
      python(), 2,
      {"--steps", "10", "--crash-rank", "0", "--crash-step", "2", "--crash-kind", "abort"});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(30s), 128 + SIGABRT) << p->output();
}

TEST_P(TrainerTest, TerminateInANativeThreadFailsTheJob) {
  auto p = launch_trainer(python(), 2,
                          {"--steps", "10", "--crash-rank", "0", "--crash-step", "2",
                           "--crash-kind", "abort-in-thread"});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(30s), 128 + SIGABRT) << p->output();
  EXPECT_NE(p->output().find("simulated watchdog timeout"), std::string::npos) << p->output();
}

TEST_P(TrainerTest, ARankThatKillsItselfFailsTheJob) {
  auto p = launch_trainer(python(), 2,
                          {"--steps", "10", "--crash-rank", "1", "--crash-step", "1",
                           "--crash-kind", "sigkill-self"});
  ASSERT_TRUE(p);
  ASSERT_EQ(p->wait_exit_code(30s), 128 + SIGKILL) << p->output();
}

TEST_P(TrainerTest, UncaughtExceptionFailsTheJob) {
  auto p = launch_trainer(
      python(), 2,
      {"--steps", "10", "--crash-rank", "1", "--crash-step", "0", "--crash-kind", "exception"});
  ASSERT_TRUE(p);
  // C++: std::terminate -> abort. Python: traceback and exit status 1.
  ASSERT_EQ(p->wait_exit_code(30s), python() ? 1 : 128 + SIGABRT) << p->output();
  EXPECT_NE(p->output().find("simulated training failure at step 0"), std::string::npos)
      << p->output();
}

INSTANTIATE_TEST_SUITE_P(CppAndPython, TrainerTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Python") : std::string("Cpp");
                         });

}  // namespace
