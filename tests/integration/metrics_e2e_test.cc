// End to end: the counts, bytes and FLOPs that /metrics reports for each rank
// are exactly what a known simulated job did.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace {

// Sums of one metric family per (rank, op) from the Prometheus text.
std::map<std::pair<std::string, std::string>, double> sum_by_rank_op(const std::string& text,
                                                                    const std::string& family) {
  std::map<std::pair<std::string, std::string>, double> out;
  const std::regex line_re("^" + family + R"(\{([^}]*)\} (\S+)$)");
  const std::regex rank_re(R"(rank="([^"]*)\")"), op_re(R"(op="([^"]*)\")");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m, r, o;
    if (!std::regex_match(line, m, line_re)) continue;
    const std::string labels = m[1];
    if (!std::regex_search(labels, r, rank_re) || !std::regex_search(labels, o, op_re)) continue;
    out[{r[1], o[1]}] += std::stod(m[2]);
  }
  return out;
}

// "0": every call timed; "": the default sampling (each (op, shape) timed
// about 10 times a second, the other calls only counted).
class MetricsE2E : public ::testing::TestWithParam<std::string> {};

TEST_P(MetricsE2E, PerRankCountsBytesAndFlopsAreExact) {
  const bool every_call_timed = GetParam() == "0";
  // 11 steps of 3 GEMMs rotating over all 7 GEMM entry points (steps 0..10;
  // rank 1 hangs at step 10 after its GEMMs), 10 completed 1 MiB all-reduces.
  SupervisedJob job(every_call_timed ? "metrics-all" : "metrics-sampled", {"--hang-timeout", "300"},
                    sim_job(2, false,
                            {"--steps", "1000", "--gemm-api", "all", "--gemm", "1024,1024,1024",
                             "--gemm-batch", "2", "--bytes", "1048576", "--hang-rank", "1",
                             "--hang-step", "10"}),
                    {"XPU_TIMER_SAMPLE_PER_SEC=" + GetParam()});
  ASSERT_TRUE(wait_until(
      [&] {
        auto ranks = job.get_json("/ranks");
        if (!ranks.is_array() || ranks.size() != 2) return false;
        for (const auto& r : ranks) {
          if (r.at("completed_total").get<uint64_t>() != 33 + 10) return false;
        }
        return true;
      },
      std::chrono::seconds(30)))
      << job.get_json("/ranks").dump(2) << job.log();

  const auto reply = http_get(job.port(), "/metrics");
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->status, 200);
  const auto ops = sum_by_rank_op(reply->body, "xpu_timer_operations_total");
  const auto flops = sum_by_rank_op(reply->body, "xpu_timer_gemm_flops_total");
  const auto bytes = sum_by_rank_op(reply->body, "xpu_timer_nccl_bytes_total");
  const auto lat_count = sum_by_rank_op(reply->body, "xpu_timer_operation_latency_seconds_count");
  const auto lat_sum = sum_by_rank_op(reply->body, "xpu_timer_operation_latency_seconds_sum");

  const double mnk2 = 2.0 * 1024 * 1024 * 1024;
  const std::map<std::string, std::pair<int, double>> expected = {
      // op -> (calls, flops per call)
      {"GemmEx", {5, mnk2}},
      {"GemmStridedBatchedEx", {5, 2 * mnk2}},
      {"Sgemm", {5, mnk2}},
      {"Hgemm", {5, mnk2}},
      {"SgemmStridedBatched", {5, 2 * mnk2}},
      {"HgemmStridedBatched", {4, 2 * mnk2}},
      {"LtMatmul", {4, 2 * mnk2}},
  };
  for (const std::string rank : {"0", "1"}) {
    for (const auto& [op, e] : expected) {
      // Every call is counted, with its FLOPs; the timed ones carry latency.
      EXPECT_EQ(ops.at({rank, op}), e.first) << rank << " " << op;
      const double timed = lat_count.at({rank, op});
      if (every_call_timed) {
        EXPECT_EQ(timed, e.first) << rank << " " << op;
      } else {
        EXPECT_GE(timed, 1) << rank << " " << op;
        EXPECT_LE(timed, e.first) << rank << " " << op;
      }
      EXPECT_EQ(flops.at({rank, op}), e.first * e.second) << rank << " " << op;
    }
    EXPECT_EQ(ops.at({rank, "AllReduce"}), 10) << rank;
    EXPECT_EQ(bytes.at({rank, "AllReduce"}), 10 * 1048576) << rank;
    // Each simulated all-reduce lasts at least 20 us + 1 MiB / 50 GB/s (less
    // 1% for the resolution of event timestamps).
    EXPECT_GE(lat_sum.at({rank, "AllReduce"}),
              lat_count.at({rank, "AllReduce"}) * (20e-6 + 1048576 / 50e9) * 0.99)
        << rank;
  }
  EXPECT_NE(reply->body.find("# TYPE xpu_timer_operation_latency_seconds histogram"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Sampling, MetricsE2E, ::testing::Values("0", ""),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param == "0" ? std::string("EveryCallTimed")
                                                 : std::string("DefaultSampling");
                         });

}  // namespace
}  // namespace xpu_timer::testing
