// End to end: the supervisor never changes how the user's job ends, ends the
// whole job on SIGTERM, and the job runs normally with the injected library
// but no supervisor, or after the supervisor was killed.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "common/env_names.h"
#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace lifecycle_e2e {

ExitStatus run_bare(const std::string& name, const std::vector<std::string>& job) {
  const std::string dir = make_temp_dir(name);
  return run_to_end(job, sim_env(), dir + "/console.log", std::chrono::seconds(60));
}

ExitStatus run_supervised(const std::string& name, const std::vector<std::string>& job) {
  SupervisedJob sj(name, {"--hang-timeout", "30"}, job);
  auto s = sj.child().wait_for(std::chrono::seconds(60));
  if (!s) {
    ADD_FAILURE() << "supervised job did not end:\n" << sj.log();
    return {};
  }
  return *s;
}

struct StatusCase {
  const char* name;
  std::vector<std::string> job;
};

class ExitStatusE2E : public ::testing::TestWithParam<StatusCase> {};

TEST_P(ExitStatusE2E, SupervisorExitsExactlyAsTheBareJob) {
  const auto& c = GetParam();
  const ExitStatus bare = run_bare(std::string("bare-") + c.name, c.job);
  const ExitStatus supervised = run_supervised(std::string("sup-") + c.name, c.job);
  EXPECT_EQ(describe(supervised), describe(bare));
  EXPECT_TRUE(supervised == bare);
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, ExitStatusE2E,
    ::testing::Values(
        StatusCase{"success", sim_job(2, false, {"--steps", "5"})},
        StatusCase{"exit3", sim_job(2, false, {"--steps", "5", "--exit-code", "3"})},
        StatusCase{"rank_segv",
                   sim_job(2, false, {"--steps", "50", "--crash-rank", "1", "--crash-step", "2",
                                      "--crash-kind", "segv"})},
        StatusCase{"job_killed_by_signal", {"/bin/sh", "-c", "kill -USR1 $$"}},
        StatusCase{"job_exit_42", {"/bin/sh", "-c", "exit 42"}}),
    [](const ::testing::TestParamInfo<StatusCase>& i) { return std::string(i.param.name); });

std::vector<pid_t> rank_pids(SupervisedJob& job) {
  std::vector<pid_t> pids;
  auto ranks = job.get_json("/ranks");
  if (!ranks.is_array()) return pids;
  for (const auto& r : ranks) pids.push_back(r.at("pid").get<pid_t>());
  return pids;
}

TEST(SignalE2E, SigtermToTheSupervisorEndsTheWholeJob) {
  // A normal stop is no crash: no crash file, no plugin run, one "terminated" line.
  const std::string jsonl = make_temp_dir("sigterm-plugins") + "/crashes.jsonl";
  SupervisedJob job("sigterm", {"--hang-timeout", "60", "--kill-grace", "3"},
                    sim_job(4, true, {"--steps", "100000", "--step-ms", "20"}),
                    {"XPU_TIMER_EXIT_HOOK_PLUGIN=" + source_dir() +
                         "/plugins/examples/jsonl_plugin.py",
                     "XPU_TIMER_PLUGIN_JSONL=" + jsonl});
  ASSERT_TRUE(job.wait_registered(4, std::chrono::seconds(30))) << job.log();
  const auto pids = rank_pids(job);
  ASSERT_EQ(pids.size(), 4u);
  job.child().signal(SIGTERM);
  auto status = job.child().wait_for(std::chrono::seconds(20));
  ASSERT_TRUE(status.has_value()) << "supervisor did not end after SIGTERM:\n" << job.log();
  for (pid_t p : pids) EXPECT_FALSE(process_alive(p)) << "rank pid " << p << " left behind";
  const std::string log = job.log();
  EXPECT_EQ(log.find("crash: "), std::string::npos) << log;
  EXPECT_EQ(::access(jsonl.c_str(), F_OK), -1) << read_file(jsonl);
  const size_t line = log.find("terminated: ");
  ASSERT_NE(line, std::string::npos) << log;
  EXPECT_EQ(log.find("terminated: ", line + 1), std::string::npos) << log;
  EXPECT_NE(log.find("terminated: ranks 0-3 stopped by SIGTERM forwarded by the supervisor"),
            std::string::npos)
      << log;
  DIR* d = ::opendir(job.dump_dir().c_str());
  while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
    EXPECT_NE(std::string(e->d_name).rfind("crash-rank", 0), 0u) << e->d_name;
  }
  if (d != nullptr) ::closedir(d);
}

// Without a supervisor every rank runs to its end and the job's own exit status comes back
// unchanged. The status is checked on a job of one rank: a rank that fails makes the launcher
// (like torchrun) terminate the others, which may not have finished yet.
TEST(NoSupervisorE2E, PreloadWithoutAListeningSupervisorRunsNormally) {
  struct Case {
    int ranks;
    int code;
  };
  for (const Case c : {Case{4, 0}, Case{1, 5}}) {
    const auto job = sim_job(c.ranks, true, {"--steps", "8", "--exit-code", std::to_string(c.code)});
    const std::string dir = make_temp_dir("nosup");
    auto env = sim_env();
    env.push_back(std::string(proto::kEnvPreload) + "=" + inject_lib());
    env.push_back(std::string(proto::kEnvSocket) + "=" + dir + "/nobody-listens.sock");
    env.push_back(std::string(proto::kEnvRunDir) + "=" + dir);
    const ExitStatus st = run_to_end(job, env, dir + "/console.log", std::chrono::seconds(60));
    EXPECT_TRUE(st.exited && st.code == c.code) << c.ranks << " ranks: " << describe(st);
    const std::string out = read_file(dir + "/console.log");
    for (int r = 0; r < c.ranks; ++r) {
      EXPECT_NE(out.find("rank " + std::to_string(r) + " done"), std::string::npos) << out;
    }
    EXPECT_NE(out.find("running without the supervisor"), std::string::npos) << out;
  }
}

// The launcher's pid: the supervisor's only child.
pid_t child_of(pid_t parent) {
  DIR* d = ::opendir("/proc");
  pid_t found = -1;
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    const auto rp = line.rfind(')');
    if (rp == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (std::sscanf(line.c_str() + rp + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      found = pid;
      break;
    }
  }
  if (d) ::closedir(d);
  return found;
}

TEST(SupervisorDeathE2E, JobKeepsRunningWhenTheSupervisorIsKilled) {
  // Orphans reparent to us, so the test can still reap the job's launcher.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  SupervisedJob job("supkill", {"--hang-timeout", "60"},
                    sim_job(4, false, {"--steps", "80", "--step-ms", "25"}));
  ASSERT_TRUE(job.wait_registered(4, std::chrono::seconds(30))) << job.log();
  const pid_t launcher = child_of(job.child().pid());
  ASSERT_GT(launcher, 0);
  job.child().signal(SIGKILL);
  ASSERT_TRUE(job.child().wait_for(std::chrono::seconds(5)).has_value());

  int st = 0;
  bool reaped = wait_until([&] { return ::waitpid(launcher, &st, WNOHANG) == launcher; },
                           std::chrono::seconds(60));
  ASSERT_TRUE(reaped) << "job did not finish after its supervisor died";
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st << "\n" << job.log();
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(job.log().find("rank " + std::to_string(r) + " done"), std::string::npos)
        << job.log();
  }
}

}  // namespace lifecycle_e2e
}  // namespace xpu_timer::testing
