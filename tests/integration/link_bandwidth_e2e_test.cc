// End to end: the bandwidth of a collective's transfer after its last member
// arrived, on /metrics beside the bandwidth of its GPU time. In a simulated
// job one rank's GPU runs its 22 ms GEMM 20% slower, so it arrives 4.4 ms
// late at every all-reduce; the simulated NCCL ends every member at the last
// arrival plus 20 us + bytes / 50 GB/s (tests/simgpu/communicator.cc). The
// transfer series must show that link whatever the wait, today's series the
// wait, and the counters each rank's share of waiting. Every call is timed
// (XPU_TIMER_SAMPLE_PER_SEC=0), so every collective of all four members
// counts. The hosts launch two steps ahead of their GPUs, as real jobs do:
// a member arrives when its stream reaches the collective, not when its
// host launched it (with an idle stream the simulated arrival would be the
// start marker's launch, a loaded host's microseconds before the
// collective's).
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace link_bandwidth_e2e {

constexpr double kBytes = 16 << 20;
// The simulated link: 20 us + bytes / 50 GB/s after the last arrival, as
// nccl-tests' bus bandwidth of a 4-rank all-reduce (factor 2(n-1)/n).
constexpr double kLinkBusBw = kBytes / (20e-6 + kBytes / 50e9) * 1.5;  // 70.8 GB/s

double collectives(const std::string& metrics, const std::string& outcome) {
  const std::string series =
      "xpu_timer_nccl_transfer_collectives_total{job_name=\"link-bandwidth\",outcome=\"" + outcome +
      "\"} ";
  const size_t at = metrics.find(series);
  return at == std::string::npos ? -1 : std::stod(metrics.substr(at + series.size()));
}

TEST(LinkBandwidthE2E, TransferBandwidthStaysAtTheLinkWhileALateRankDragsTheGpuTimeOne) {
  SupervisedJob job("link-bandwidth", {"--hang-timeout", "120", "--poll-ms", "200"},
                    sim_job(4, false,
                            {"--steps", "100000", "--sync-lag", "2", "--gemm", "8192,8192,16384",
                             "--gemms-per-step", "1", "--slow-gpu-rank", "2", "--slow-gpu-factor",
                             "1.2", "--bytes", std::to_string(static_cast<long>(kBytes))}),
                    {"XPU_TIMER_SAMPLE_PER_SEC=0", "XPU_TIMER_JOB_NAME=link-bandwidth"});
  ASSERT_TRUE(job.wait_registered(4, std::chrono::seconds(60))) << job.log();
  const auto [metrics, ready] = job.metrics_when(
      [](const std::string& m) {
        for (int rank = 0; rank < 4; ++rank) {
          if (value_of(m, "xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second", rank) <= 0) {
            return false;
          }
        }
        return collectives(m, "measured") >= 50;
      },
      std::chrono::seconds(120));
  ASSERT_TRUE(ready) << metrics << job.log();
  // The sim's events are its tasks' exact boundaries and the transfer is one
  // rank's own GPU time, so only cudaEventElapsedTime's float milliseconds
  // (24 bits) round it: 1% is margin, not noise.
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NEAR(value_of(metrics, "xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second", rank,
                         "op=\"AllReduce\",dtype=\"bf16\",size_bucket=\"24\",nranks=\"4\""),
                kLinkBusBw, kLinkBusBw * 0.01)
        << "rank " << rank << "\n"
        << metrics;
  }
  // Today's series divides by the GPU time, which holds the 4.4 ms wait:
  // 0.36 ms of transfer in 4.8 ms, a thirteenth of the link.
  const double gpu_time_bw =
      value_of(metrics, "xpu_timer_nccl_bus_bandwidth_bytes_per_second", 0, "op=\"AllReduce\"");
  EXPECT_GT(gpu_time_bw, 0) << metrics;
  EXPECT_LT(gpu_time_bw, kLinkBusBw / 5) << metrics;
  // The wait share, as the dashboard takes it (rates of the two counters,
  // so the job's start, when the ranks came up seconds apart, is left out):
  // rank 0 waits 4.4 ms for rank 2 at every collective, rank 2 for nobody.
  const double measured = collectives(metrics, "measured");
  const auto [later, more] = job.metrics_when(
      [&](const std::string& m) { return collectives(m, "measured") >= measured + 30; },
      std::chrono::seconds(120));
  ASSERT_TRUE(more) << later;
  auto share = [&](int rank) {
    auto delta = [&](const char* family) {
      return value_of(later, family, rank) - value_of(metrics, family, rank);
    };
    const double wait = delta("xpu_timer_nccl_wait_seconds_total");
    const double transfer = delta("xpu_timer_nccl_transfer_seconds_total");
    return wait + transfer > 0 ? wait / (wait + transfer) : -1;
  };
  EXPECT_GT(share(0), 0.8) << metrics << later;
  EXPECT_LT(share(2), 0.05) << metrics << later;
  EXPECT_NE(metrics.find("xpu_timer_nccl_wait_seconds_total{rank=\"0\",comm=\""),
            std::string::npos);
  // Every call timed: no collective skipped for a member sampled out.
  EXPECT_EQ(collectives(metrics, "sampled_out"), 0) << metrics;
  EXPECT_EQ(collectives(metrics, "remote_member"), 0) << metrics;
}

}  // namespace link_bandwidth_e2e
}  // namespace xpu_timer::testing
