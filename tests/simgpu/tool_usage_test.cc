// sim_trainer and xpu_timer_sim_launch as a user meets them: --help lists
// every flag with its default and environment variable, and each usage error
// names the flag and what was wrong, exit status 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace {

struct ToolRun {
  int rc = -1;
  std::string out;  // stdout and stderr
};

// `args` are shell words (quoted by the caller where needed).
ToolRun run(const std::string& command) {
  ToolRun r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(ToolUsage, TrainerHelpListsEveryFlagWithDefaultAndVariable) {
  const ToolRun r = run(SIM_TRAINER " --help");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.rfind("usage: sim_trainer [--steps N]", 0), 0u) << r.out;
  for (const char* lines :
       {"  --steps N               training steps to run\n"
        "                          default 10; no environment variable\n",
        "  --lib-dir DIR           folder of libsim_workload.so\n"
        "                          default the build's simgpu/lib; environment "
        "XPU_TIMER_SIM_LIB_DIR\n",
        "  --hang-rank R           this rank stops in stuck_in_host_code at --hang-step\n"
        "                          default -1 (none); no environment variable\n",
        "  --verbose               print every step\n"
        "                          default off; no environment variable\n"}) {
    EXPECT_NE(r.out.find(lines), std::string::npos) << lines << r.out;
  }
  for (const char* flag :
       {"--gemm M,N,K", "--gemm-api NAME|all", "--gemm-batch B", "--gemms-per-step G",
        "--collective NAME", "--bytes B", "--hang-step S", "--slow-rank R", "--slow-ms T",
        "--jitter-ms J", "--step-ms T", "--crash-rank R", "--crash-step S", "--crash-kind KIND",
        "--comm-name NAME", "--exit-code C"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + flag + " "), std::string::npos) << flag;
  }
}

TEST(ToolUsage, TrainerUsageErrorsSayWhatWasWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"--steps abc", "sim_trainer: --steps: 'abc' is not a whole number >= 0\n"},
      {"--gemm 1,2", "sim_trainer: --gemm: '1,2' is not M,N,K with three whole numbers > 0\n"},
      {"--crash-kind boom",
       "sim_trainer: --crash-kind: 'boom' is not segv, abort, abort-in-thread, sigkill-self or "
       "exception\n"},
      {"--exit-code 300", "sim_trainer: --exit-code: '300' is not a whole number 0-255\n"},
      {"--slow-ms -1", "sim_trainer: --slow-ms: '-1' is not a number of milliseconds >= 0\n"},
      {"--steps", "sim_trainer: --steps needs a value (N)\n"},
      {"--comm-name ''", "sim_trainer: --comm-name: '' is not a name\n"},
      {"--frobnicate 1", "sim_trainer: unknown flag '--frobnicate' (see --help)\n"},
  };
  for (const auto& [args, message] : cases) {
    const ToolRun r = run(std::string(SIM_TRAINER " ") + args);
    EXPECT_EQ(r.rc, 2) << args;
    EXPECT_EQ(r.out.rfind(message, 0), 0u) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("usage: sim_trainer"), std::string::npos) << r.out;
  }
}

TEST(ToolUsage, LauncherHelpListsEveryFlagWithDefaultAndVariable) {
  const ToolRun r = run(SIM_LAUNCH " --help");
  EXPECT_EQ(r.rc, 0) << r.out;
  for (const char* lines :
       {"  --nproc N               ranks to run, 1 to 64 (also --nproc-per-node, "
        "--nproc_per_node)\n"
        "                          required; no environment variable\n",
        "  --job-id ID             names the job's shared memory (letters, digits, '.', '_', '-')\n"
        "                          default generated; environment XPU_TIMER_SIM_JOB_ID\n",
        "  --grace-s S             seconds from SIGTERM to SIGKILL when the ranks are stopped\n"
        "                          default 5; environment XPU_TIMER_SIM_GRACE_S\n",
        "  -h, --help              this help\n"}) {
    EXPECT_NE(r.out.find(lines), std::string::npos) << lines << r.out;
  }
}

TEST(ToolUsage, LauncherUsageErrorsSayWhatWasWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"--nproc abc -- true",
       "xpu_timer_sim_launch: --nproc: 'abc' is not a number of ranks (1 to 64)\n"},
      {"--nproc 0 -- true",
       "xpu_timer_sim_launch: --nproc: '0' is not a number of ranks (1 to 64)\n"},
      {"-- true", "xpu_timer_sim_launch: --nproc is required: how many ranks?\n"},
      {"--nproc 2", "xpu_timer_sim_launch: no program to run (put it after --)\n"},
      {"--nproc 1 --job-id a/b -- true",
       "xpu_timer_sim_launch: --job-id: 'a/b' is not a job id (1 to 100 letters, digits, '.', "
       "'_', '-')\n"},
      {"--nproc 1 --grace-s soon -- true",
       "xpu_timer_sim_launch: --grace-s: 'soon' is not a number of seconds (0 to 3600)\n"},
      {"--nproc 1 --grace-s", "xpu_timer_sim_launch: --grace-s needs a value\n"},
      {"--nproc 1 true",
       "xpu_timer_sim_launch: unknown option 'true' (the program goes after --; see --help)\n"},
  };
  for (const auto& [args, message] : cases) {
    const ToolRun r = run(std::string(SIM_LAUNCH " ") + args);
    EXPECT_EQ(r.rc, 2) << args;
    EXPECT_EQ(r.out.rfind(message, 0), 0u) << args << "\n" << r.out;
  }
  const ToolRun env = run("XPU_TIMER_SIM_GRACE_S=x " SIM_LAUNCH " --nproc 1 -- true");
  EXPECT_EQ(env.rc, 2);
  EXPECT_EQ(env.out.rfind("xpu_timer_sim_launch: XPU_TIMER_SIM_GRACE_S: 'x' is not a number of "
                          "seconds (0 to 3600)\n",
                          0),
            0u)
      << env.out;
}

}  // namespace
