#include "supervisor/metrics/transfer_metrics.h"

#include <gtest/gtest.h>

#include "common/op_names.h"

namespace xpu_timer::supervisor {
namespace {

TransferReport sample_report() {
  TransferReport r;
  TransferSeries s;
  s.key.rank = 3;
  s.key.op = static_cast<uint16_t>(proto::OpName::kAllReduce);
  s.key.dtype = static_cast<uint8_t>(proto::DType::kBF16);
  s.key.size_bucket = 25;
  s.key.nranks = 4;
  s.collectives = 12;
  s.bus_bandwidth = 2.5e11;
  r.series.push_back(s);
  s.key.size_bucket = 26;  // nothing measured in the window: no sample
  s.bus_bandwidth = 0;
  r.series.push_back(s);
  RankCommTime t;
  t.rank = 3;
  t.comm = 0x1a2b;
  t.comm_name = "dp\"0";
  t.collectives = 12;
  t.wait_ns = 1'500'000'000;
  t.transfer_ns = 2'400'000;
  r.times.push_back(t);
  r.counts = TransferCounts{12, 40, 2, 1};
  return r;
}

TEST(TransferMetrics, BandwidthWaitAndTransferPerRank) {
  const std::string text = transfer_metrics_text(sample_report(), "my\"job");
  const std::string job = "job_name=\"my\\\"job\"";
  EXPECT_NE(text.find("# TYPE xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second gauge\n"
                      "xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second{rank=\"3\","
                      "op=\"AllReduce\",dtype=\"bf16\",size_bucket=\"25\",nranks=\"4\"," +
                      job + "} 2.5e+11\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("size_bucket=\"26\""), std::string::npos) << "a stale bandwidth";
  const std::string comm = "rank=\"3\",comm=\"0000000000001a2b\",comm_name=\"dp\\\"0\"," + job;
  EXPECT_NE(text.find("# TYPE xpu_timer_nccl_wait_seconds_total counter\n"
                      "xpu_timer_nccl_wait_seconds_total{" +
                      comm + "} 1.500000000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE xpu_timer_nccl_transfer_seconds_total counter\n"
                      "xpu_timer_nccl_transfer_seconds_total{" +
                      comm + "} 0.002400000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE xpu_timer_nccl_transfer_collectives_total counter\n"
                      "xpu_timer_nccl_transfer_collectives_total{" +
                      job +
                      ",outcome=\"measured\"} 12\n"
                      "xpu_timer_nccl_transfer_collectives_total{" +
                      job +
                      ",outcome=\"sampled_out\"} 40\n"
                      "xpu_timer_nccl_transfer_collectives_total{" +
                      job +
                      ",outcome=\"missing_member\"} 2\n"
                      "xpu_timer_nccl_transfer_collectives_total{" +
                      job + ",outcome=\"remote_member\"} 1\n"),
            std::string::npos)
      << text;
}

// Before any collective: the outcome counters alone, at 0, so that a panel
// of the share measured shows the meter is there.
TEST(TransferMetrics, NothingMeasuredYetIsTheOutcomesAtZero) {
  const std::string text = transfer_metrics_text(TransferReport{}, "j");
  EXPECT_EQ(text.find("xpu_timer_nccl_transfer_bus_bandwidth"), std::string::npos);
  EXPECT_EQ(text.find("xpu_timer_nccl_wait_seconds_total"), std::string::npos);
  EXPECT_NE(
      text.find(
          "xpu_timer_nccl_transfer_collectives_total{job_name=\"j\",outcome=\"measured\"} 0\n"),
      std::string::npos)
      << text;
}

}  // namespace
}  // namespace xpu_timer::supervisor
