// End to end: simulated jobs in which one rank holds the others up at every
// collective. The supervisor must name that rank on GET /slow with the right
// cause, log it once, export it on /metrics and say when it clears; a healthy
// job with jitter gets no straggler. Each test polls until the verdict
// appears (bounded generously for a loaded machine), never for a guessed time.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/harness/http_probe.h"
#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

// Polls GET /slow until a straggler is named or `limit` passes; the last
// answer either way.
nlohmann::json wait_for_straggler(SupervisedJob& job, seconds limit) {
  const auto deadline = steady_clock::now() + limit;
  nlohmann::json slow;
  while (steady_clock::now() < deadline) {
    slow = job.get_json("/slow");
    if (slow.is_object() && !slow.value("stragglers", nlohmann::json::array()).empty()) break;
    if (job.child().wait_for(std::chrono::milliseconds(0)).has_value()) break;  // the job ended first
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return slow;
}

struct SlowCase {
  const char* name;
  bool python;
  std::vector<std::string> knobs;  // the trainer's flags that slow rank 2
  const char* cause;
};

std::string case_name(const ::testing::TestParamInfo<SlowCase>& info) {
  return std::string(info.param.name) + (info.param.python ? "_python" : "_cpp");
}

class StragglerE2E : public ::testing::TestWithParam<SlowCase> {};

TEST_P(StragglerE2E, NamesTheRankItsCauseAndItsCost) {
  const SlowCase& c = GetParam();
  std::vector<std::string> trainer = {"--steps", "100000", "--step-ms", "20", "--jitter-ms", "1"};
  trainer.insert(trainer.end(), c.knobs.begin(), c.knobs.end());
  SupervisedJob job(std::string("straggler-") + c.name,
                    {"--hang-timeout", "120", "--poll-ms", "200", "--slow-window", "20"},
                    sim_job(4, c.python, trainer));
  ASSERT_TRUE(job.wait_registered(4, std::chrono::seconds(60))) << job.log();
  const nlohmann::json slow = wait_for_straggler(job, seconds(120));
  ASSERT_TRUE(slow.is_object()) << job.log();
  ASSERT_EQ(slow.at("stragglers").size(), 1u) << slow.dump(2) << job.log();
  const nlohmann::json& s = slow.at("stragglers")[0];
  EXPECT_EQ(s.at("rank"), 2) << s.dump(2);
  EXPECT_EQ(s.at("node"), 0) << s.dump(2);
  EXPECT_EQ(s.at("cause"), c.cause) << s.dump(2);
  EXPECT_GT(s.at("late_share").get<double>(), 0.5) << s.dump(2);
  EXPECT_GT(s.at("median_late_s").get<double>(), 0.0) << s.dump(2);
  EXPECT_GT(s.at("wait_caused_s").get<double>(), 0.0) << s.dump(2);
  EXPECT_EQ(s.at("operation"), "AllReduce");
  const std::string summary = s.at("summary").get<std::string>();
  EXPECT_EQ(summary.rfind("rank 2 on node 0 arrived last at ", 0), 0u) << summary;
  EXPECT_EQ(slow.at("summary"), summary);
  EXPECT_DOUBLE_EQ(slow.at("window_s").get<double>(), 20.0);
  // Logged once, as it appeared.
  const std::string log = job.log();
  EXPECT_NE(log.find("straggler: rank 2 on node 0"), std::string::npos) << log;
  // On /metrics with its cause.
  const auto deadline = steady_clock::now() + seconds(30);
  std::string metrics;
  while (steady_clock::now() < deadline) {
    const auto reply = http_get(job.port(), "/metrics");
    metrics = reply ? reply->body : std::string();
    if (metrics.find("xpu_timer_straggler{rank=\"2\"") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_NE(metrics.find(std::string("node=\"0\",cause=\"") + c.cause + "\"} 1"), std::string::npos)
      << metrics;
  EXPECT_GT(value_of(metrics, "xpu_timer_rank_wait_caused_seconds_total", 2), 0) << metrics;
  EXPECT_GT(value_of(metrics, "xpu_timer_rank_late_share", 2), 0.5) << metrics;
  // xpu-timer's own cost beside it: the Poller's CPU and the hooks' time (a
  // few hundred calls by now: sampled one in 64), the supervisor's CPU.
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_GT(value_of(metrics, "xpu_timer_self_poller_cpu_seconds_total", rank), 0) << metrics;
    EXPECT_GT(value_of(metrics, "xpu_timer_self_hook_seconds_total", rank), 0) << metrics;
  }
  EXPECT_NE(metrics.find("xpu_timer_self_supervisor_cpu_seconds_total{job_name="), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Causes, StragglerE2E,
    ::testing::Values(
        SlowCase{"host", false, {"--slow-rank", "2", "--slow-ms", "5"}, "host"},
        SlowCase{"host", true, {"--slow-rank", "2", "--slow-ms", "5"}, "host"},
        // GPU-bound steps (3 GEMMs of 22 ms against 20 ms of host time), the
        // rank's GEMMs 20% slower.
        SlowCase{"gpu", false, {"--gemm", "8192,8192,16384", "--slow-gpu-rank", "2",
                                "--slow-gpu-factor", "1.2"}, "gpu"},
        SlowCase{"gpu", true, {"--gemm", "8192,8192,16384", "--slow-gpu-rank", "2",
                               "--slow-gpu-factor", "1.2"}, "gpu"},
        // 64 MiB all-reduces (~2.5 ms at the sim's bus), the rank's 3 times as long.
        SlowCase{"link", false, {"--bytes", "67108864", "--slow-link-rank", "2",
                                 "--slow-link-factor", "3"}, "link"},
        SlowCase{"link", true, {"--bytes", "67108864", "--slow-link-rank", "2",
                                "--slow-link-factor", "3"}, "link"}),
    case_name);

// Ten ranks of jitter and nothing else: no rank is named, while the
// analysis has judged plenty of collectives.
TEST(StragglerE2EHealthy, JitterAloneNamesNobody) {
  SupervisedJob job("straggler-healthy", {"--hang-timeout", "120", "--poll-ms", "200",
                                          "--slow-window", "10"},
                    sim_job(4, false, {"--steps", "1500", "--step-ms", "10", "--jitter-ms", "3",
                                       "--bytes", "65536"}));
  uint64_t judged = 0;
  for (;;) {
    const nlohmann::json slow = job.get_json("/slow");
    if (job.child().wait_for(std::chrono::milliseconds(0)).has_value()) break;
    if (slow.is_object()) {
      EXPECT_TRUE(slow.at("stragglers").empty()) << slow.dump(2);
      judged = slow.at("collectives_judged").get<uint64_t>();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_GT(judged, 500u) << job.log();
  EXPECT_EQ(job.log().find("straggler:"), std::string::npos) << job.log();
}

}  // namespace
}  // namespace xpu_timer::testing
