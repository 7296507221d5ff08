#include "supervisor/metrics/job_name.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace xpu_timer::supervisor {
namespace {

JobNameSources sources(const std::map<std::string, std::string>& env, std::string job_id = "") {
  JobNameSources s;
  s.env = [env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  s.job_id = std::move(job_id);
  s.launcher = "/usr/local/bin/torchrun";
  s.host = "node7";
  s.start = 1795601702;  // 2026-11-25 10:15:02 UTC
  return s;
}

TEST(JobName, TheNameGivenWins) {
  EXPECT_EQ(
      metrics_job_name(sources(
          {{"XPU_TIMER_JOB_NAME", "llama-70b"}, {"ENV_ARGO_WORKFLOW_NAME", "wf-1"}}, "rdzv-9")),
      "llama-70b");
  EXPECT_EQ(metrics_job_name(sources({{"ENV_ARGO_WORKFLOW_NAME", "wf-1"}}, "rdzv-9")), "wf-1");
  // Empty means unset.
  EXPECT_EQ(metrics_job_name(sources({{"XPU_TIMER_JOB_NAME", ""}}, "rdzv-9")), "rdzv-9");
}

TEST(JobName, ElseTheJobId) { EXPECT_EQ(metrics_job_name(sources({}, "run-42")), "run-42"); }

// Never the launcher's name alone: two jobs launched by torchrun would share
// it. The fallback says what made it, and differs per node and run.
TEST(JobName, ElseGeneratedFromLauncherHostAndStart) {
  EXPECT_EQ(metrics_job_name(sources({})), "torchrun-node7-20261125-101502");
  JobNameSources s = sources({});
  s.launcher = "";
  s.host = "";
  EXPECT_EQ(metrics_job_name(s), "job-unknown-host-20261125-101502");
}

}  // namespace
}  // namespace xpu_timer::supervisor
