// End to end: NVTX ranges and training steps of a Python rank, as a user of
// torch.cuda.nvtx or Megatron sees them. The trainer makes real NVTX v3 calls
// (tests/simgpu/workload_nvtx.cc); the supervisor points NVTX at our library;
// the ranges come out as /metrics histograms per name and as slices of a
// timeline dump, the steps as a step-time histogram.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace nvtx_e2e {

std::string range_label(const std::string& name) { return "range=\"" + name + "\""; }

// Waits for both ranks' "loop done", then for /metrics to show `steps`
// steps on each rank; returns the exposition.
std::string metrics_after_steps(SupervisedJob& job, int steps) {
  for (int r = 0; r < 2; ++r) {
    const std::string done = "rank " + std::to_string(r) + " loop done";
    EXPECT_TRUE(wait_until([&] { return job.log().find(done) != std::string::npos; },
                           std::chrono::seconds(120)))
        << job.log();
  }
  std::string text;
  EXPECT_TRUE(wait_until(
      [&] {
        const auto reply = http_get(job.port(), "/metrics");
        if (!reply.has_value() || reply->status != 200) return false;
        text = reply->body;
        return value_of(text, "xpu_timer_step_seconds_count", 0) >= steps &&
               value_of(text, "xpu_timer_step_seconds_count", 1) >= steps;
      },
      std::chrono::seconds(30)))
      << text << job.log();
  return text;
}

constexpr int kSteps = 12;
// 10 ms of simulated GPU time per GEMM (8000^3 at 100 TFLOP/s): a step's busy
// time must outweigh how far a loaded machine can shift the GPU-to-host clock
// mapping of the simulated GPU (its stream threads run late when descheduled),
// or a short step may see none of its GEMMs inside its window.
constexpr const char* kLongGemm = "8000,8000,8000";
constexpr int kExtraNames = 70;  // more than the 63 names a rank keeps

TEST(NvtxE2E, RangesAndAStepRangeAreCountedExactlyAndDrawnInTheTimeline) {
  // Histograms per rank (--metrics-histograms rank): each rank's are checked.
  SupervisedJob job("nvtx-ranges", {"--hang-timeout", "300", "--metrics-histograms", "rank"},
                    sim_job(2, true,
                            {"--steps", std::to_string(kSteps), "--gemms-per-step", "2", "--gemm",
                             kLongGemm, "--bytes", "4096", "--nvtx", "--nvtx-names",
                             std::to_string(kExtraNames), "--end-sleep-s", "60"}),
                    {"XPU_TIMER_STEP_RANGE=train_step", "XPU_TIMER_SAMPLE_PER_SEC=0"});
  ASSERT_GT(job.port(), 0) << job.log();
  const std::string text = metrics_after_steps(job, kSteps);
  // Names: "(other)" (id 0), train_step (interned first), then in order of
  // first use forward, backward, allreduce, layer_0 .. layer_58; the NCCL
  // domain's range is ignored, layer_59 .. layer_69 go to "(other)".
  const int kept_layers = 64 - 5;
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const std::string count = "xpu_timer_nvtx_range_seconds_count";
    for (const char* name : {"train_step", "forward", "backward", "allreduce", "layer_0"}) {
      EXPECT_EQ(value_of(text, count, r, range_label(name)), kSteps) << name << "\n" << text;
    }
    EXPECT_EQ(value_of(text, count, r, range_label("layer_" + std::to_string(kept_layers - 1))),
              kSteps);
    EXPECT_EQ(value_of(text, count, r, range_label("layer_" + std::to_string(kept_layers))), -1);
    EXPECT_EQ(value_of(text, count, r, range_label("(other)")),
              kSteps * (kExtraNames - kept_layers));
    EXPECT_EQ(value_of(text, count, r, range_label("ncclAllReduce")), -1) << text;
    EXPECT_EQ(value_of(text, "xpu_timer_nvtx_ranges_dropped_total", r), 0);
    // allreduce nests inside backward: never longer in total.
    const std::string sum = "xpu_timer_nvtx_range_seconds_sum";
    EXPECT_LE(value_of(text, sum, r, range_label("allreduce")),
              value_of(text, sum, r, range_label("backward")));
    // Every train_step range is one step, with the same durations.
    EXPECT_EQ(value_of(text, "xpu_timer_step_seconds_count", r, "source=\"nvtx\""), kSteps);
    EXPECT_EQ(value_of(text, "xpu_timer_step_seconds_sum", r),
              value_of(text, sum, r, range_label("train_step")));
    EXPECT_GT(value_of(text, "xpu_timer_step_last_seconds", r), 0);
  }

  // Every GEMM is timed (sample rate 0): each step's GPU busy and idle time
  // is measured once its operations are all accounted, and they add up to
  // the step's duration.
  std::string settled;
  ASSERT_TRUE(wait_until(
      [&] {
        const auto reply = http_get(job.port(), "/metrics");
        if (!reply.has_value() || reply->status != 200) return false;
        settled = reply->body;
        for (int r = 0; r < 2; ++r) {
          const double busy = value_of(settled, "xpu_timer_step_gpu_busy_seconds_total", r);
          const double idle = value_of(settled, "xpu_timer_step_gpu_idle_seconds_total", r);
          const double steps = value_of(settled, "xpu_timer_step_seconds_sum", r);
          if (busy < 0 || std::abs(busy + idle - steps) > 1e-8) return false;
        }
        return true;
      },
      std::chrono::seconds(30)))
      << settled;
  for (int r = 0; r < 2; ++r) {
    EXPECT_GT(value_of(settled, "xpu_timer_step_gpu_busy_seconds_total", r), 0);
    EXPECT_EQ(value_of(settled, "xpu_timer_step_untimed_operations_total", r), 0);
    const double ratio = value_of(settled, "xpu_timer_step_bubble_ratio", r);
    EXPECT_GE(ratio, 0);
    EXPECT_LT(ratio, 1);
  }

  // The timeline dump draws them, named, on host tracks of their own.
  const auto reply = http_post(job.port(), "/dump/timeline");
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->status, 200) << reply->body;
  const std::string dir = nlohmann::json::parse(reply->body).at("dir").get<std::string>();
  const auto trace = wait_for_dump_trace(reply->body);
  ASSERT_TRUE(trace.is_object()) << "no trace in " << dir;
  std::map<std::pair<int, std::string>, int> slices;   // (pid, name) -> count
  std::map<std::pair<int, int>, std::string> threads;  // (pid, tid) -> track name
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name") {
      threads[{e.at("pid").get<int>(), e.at("tid").get<int>()}] =
          e.at("args").at("name").get<std::string>();
    }
  }
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "range") continue;
    const int pid = e.at("pid").get<int>();
    const std::string name = e.at("name").get<std::string>();
    ++slices[{pid, name}];
    const std::string& track = threads[{pid, e.at("tid").get<int>()}];
    if (name == "step") {
      EXPECT_EQ(track, "training steps");
    } else if (name == "train_step") {
      EXPECT_EQ(track, "NVTX start/end ranges");
    } else if (name.rfind("cudaMalloc ", 0) == 0 || name.rfind("cudaFree", 0) == 0) {
      EXPECT_EQ(track.rfind("cudaMalloc/cudaFree thread ", 0), 0u) << track;  // the sim's buffers
    } else {
      EXPECT_EQ(track.rfind("NVTX thread ", 0), 0u) << track;
    }
  }
  for (int pid : {1, 2}) {  // ranks 0 and 1
    SCOPED_TRACE("pid " + std::to_string(pid));
    for (const char* name : {"step", "train_step", "forward", "backward", "allreduce"}) {
      EXPECT_EQ((slices[{pid, name}]), kSteps) << name;
    }
    EXPECT_EQ((slices[{pid, "(other)"}]), kSteps * (kExtraNames - kept_layers));
  }
  job.child().signal(SIGTERM);
  EXPECT_TRUE(job.child().wait_for(std::chrono::seconds(30)).has_value());
}

TEST(NvtxE2E, WithoutAStepRangeTheOptimizerHookMarksSteps) {
  SupervisedJob job("nvtx-optimizer", {"--hang-timeout", "300", "--metrics-histograms", "rank"},
                    sim_job(2, true,
                            {"--steps", std::to_string(kSteps), "--gemms-per-step", "1", "--bytes",
                             "4096", "--optimizer-steps", "--await-probes", "--end-sleep-s", "60"}),
                    {"XPU_TIMER_OPTIMIZER_HOOK=__main__:register_step_hook"});
  ASSERT_GT(job.port(), 0) << job.log();
  // The first optimizer step only starts the clock.
  const std::string text = metrics_after_steps(job, kSteps - 1);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_NE(job.log().find("rank " + std::to_string(r) + " probes installed"), std::string::npos)
        << job.log();
    EXPECT_EQ(value_of(text, "xpu_timer_step_seconds_count", r, "source=\"optimizer\""), kSteps - 1)
        << text;
    EXPECT_GT(value_of(text, "xpu_timer_step_seconds_sum", r), 0);
    // No NVTX call was made: no range series at all.
    EXPECT_EQ(value_of(text, "xpu_timer_nvtx_range_seconds_count", r), -1);
  }
  job.child().signal(SIGTERM);
  EXPECT_TRUE(job.child().wait_for(std::chrono::seconds(30)).has_value());
}

}  // namespace nvtx_e2e
}  // namespace xpu_timer::testing
