// The slow-rank knobs (slow_rank.h): on XPU_TIMER_SIM_SLOW_GPU_RANK every
// kernel and GEMM takes the factor times its simulated time; on
// XPU_TIMER_SIM_SLOW_LINK_RANK a collective or transfer ends at the last
// arrival plus the factor times its duration while its peers' end as before.
// Times are exact simulated nanoseconds read on the stream
// (simgpu_rank_helper's gpu-times and link-times), never wall-clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <regex>
#include <string>

#include "tests/harness/child_process.h"
#include "tests/simgpu/sim_segments.h"

namespace {

namespace t = xpu_timer::simgpu::testing;
using xpu_timer::testing::Child;
using xpu_timer::testing::have_python;
using xpu_timer::testing::python3;
using namespace std::chrono_literals;

// "gpu-times gemmex 21474 ltmatmul ..." -> {gemmex: 21474, ...}
std::map<std::string, uint64_t> gpu_times(const std::string& output) {
  std::map<std::string, uint64_t> out;
  const size_t at = output.find("gpu-times ");
  if (at == std::string::npos) return out;
  const std::string line = output.substr(at, output.find('\n', at) - at);
  const std::regex pair(R"(([a-z]+) (\d+))");
  for (auto it = std::sregex_iterator(line.begin(), line.end(), pair); it != std::sregex_iterator();
       ++it) {
    out[(*it)[1]] = std::stoull((*it)[2]);
  }
  return out;
}

TEST(SlowRank, KernelsOfTheSlowGpuRankTakeTheFactorTimesTheirTime) {
  const std::vector<std::string> knob = {"XPU_TIMER_SIM_SLOW_GPU_RANK=1",
                                         "XPU_TIMER_SIM_SLOW_GPU_FACTOR=3"};
  auto env_of = [&](const char* rank) {
    std::vector<std::string> env = knob;
    env.push_back(std::string("RANK=") + rank);
    return env;
  };
  Child fast({SIM_RANK_HELPER, "gpu-times"}, env_of("0"));
  Child slow({SIM_RANK_HELPER, "gpu-times"}, env_of("1"));
  ASSERT_EQ(fast.wait_exit_code(20s), 0) << fast.output();
  ASSERT_EQ(slow.wait_exit_code(20s), 0) << slow.output();
  const auto base = gpu_times(fast.output());
  const auto scaled = gpu_times(slow.output());
  ASSERT_EQ(base.size(), 5u) << fast.output();
  ASSERT_EQ(scaled.size(), 5u) << slow.output();
  // Rank 0 is untouched: 2*1024^3 flop at 100 TFLOP/s, 3 of them batched,
  // XPU_TIMER_SIM_KERNEL_US 2 for a launched kernel.
  EXPECT_EQ(base.at("gemmex"), 21474u);
  EXPECT_EQ(base.at("ltmatmul"), 21474u);
  EXPECT_EQ(base.at("sgemmstridedbatched"), 64424u);
  EXPECT_EQ(base.at("kernel"), 2000u);
  EXPECT_GT(base.at("memset"), 0u);
  for (const auto& [what, ns] : base) EXPECT_EQ(scaled.at(what), 3 * ns) << what;
  EXPECT_NE(slow.output().find("simgpu: rank 1: kernels take 3x their simulated time"),
            std::string::npos)
      << slow.output();
  EXPECT_EQ(fast.output().find("simgpu: rank"), std::string::npos) << fast.output();
}

struct LinkTimes {
  uint64_t arrival = 0, end = 0, p2p_end = 0;
};

TEST(SlowRank, SlowLinkRankEndsTheFactorTimesLaterAfterTheLastArrival) {
  const std::string job = t::unique_job_id();
  Child launch({SIM_LAUNCH, "--nproc", "2", "--job-id", job, "--", SIM_RANK_HELPER, "link-times"},
               {"XPU_TIMER_SIM_SLOW_LINK_RANK=1", "XPU_TIMER_SIM_SLOW_LINK_FACTOR=3"});
  ASSERT_EQ(launch.wait_exit_code(30s), 0) << launch.output();
  const std::string out = launch.output();
  LinkTimes r[2];
  const std::regex line(R"(link-times rank (\d) arrival (\d+) end (\d+) p2p-end (\d+))");
  int seen = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator();
       ++it, ++seen) {
    LinkTimes& x = r[std::stoi((*it)[1]) % 2];
    x = {std::stoull((*it)[2]), std::stoull((*it)[3]), std::stoull((*it)[4])};
  }
  ASSERT_EQ(seen, 2) << out;
  // 4 MiB: 20 us + 4194304 B / 50 GB/s (the defaults), truncated to the ns.
  const uint64_t d = 103886;
  const uint64_t last = std::max(r[0].arrival, r[1].arrival);
  EXPECT_EQ(r[0].end - last, d) << out;
  EXPECT_EQ(r[1].end - last, 3 * d) << out;
  // Rank 0's eager send starts at its all-reduce's end and takes d; rank 1's
  // receive starts at the later of that and its own (slower) end, and takes 3d.
  EXPECT_EQ(r[0].p2p_end - r[0].end, d) << out;
  EXPECT_EQ(r[1].p2p_end - std::max(r[0].end, r[1].end), 3 * d) << out;
  EXPECT_EQ(t::count_segments(job), 0);
}

// Both trainers document the knobs, with their defaults and variables, and
// refuse a factor that is not > 0.
TEST(SlowRank, TrainersDocumentTheKnobsAndCheckTheFactors) {
  const bool python = have_python();
  Child cpp({SIM_TRAINER, "--help"});
  ASSERT_EQ(cpp.wait_exit_code(20s), 0) << cpp.output();
  for (const char* lines :
       {"  --slow-gpu-rank R       every kernel and GEMM of this rank takes --slow-gpu-factor "
        "times as long\n"
        "                          default -1 (none); environment XPU_TIMER_SIM_SLOW_GPU_RANK\n",
        "  --slow-gpu-factor F     slowdown of --slow-gpu-rank's GPU (> 0)\n"
        "                          default 1.0; environment XPU_TIMER_SIM_SLOW_GPU_FACTOR\n",
        "                          default -1 (none); environment XPU_TIMER_SIM_SLOW_LINK_RANK\n",
        "  --slow-link-factor F    slowdown of --slow-link-rank's links (> 0)\n"
        "                          default 1.0; environment XPU_TIMER_SIM_SLOW_LINK_FACTOR\n"}) {
    EXPECT_NE(cpp.output().find(lines), std::string::npos) << lines << cpp.output();
  }
  Child bad_cpp({SIM_TRAINER, "--slow-link-factor", "0"});
  ASSERT_EQ(bad_cpp.wait_exit_code(20s), 2) << bad_cpp.output();
  EXPECT_EQ(bad_cpp.output().rfind(
                "sim_trainer: --slow-link-factor: '0' is not a finite factor > 0\n", 0),
            0u)
      << bad_cpp.output();
  if (!python) GTEST_SKIP() << "python3 with ctypes is not installed";
  // argparse wraps at COLUMNS (even inside a flag's name): compare unwrapped
  // text with spaces folded.
  Child py({python3(), SIM_TRAINER_PY, "--help"}, {"COLUMNS=1000"});
  ASSERT_EQ(py.wait_exit_code(20s), 0) << py.output();
  const std::string help = std::regex_replace(py.output(), std::regex(R"(\s+)"), " ");
  for (const char* text :
       {"--slow-gpu-rank SLOW_GPU_RANK every kernel and GEMM of this rank takes --slow-gpu-factor "
        "times as long (-1: none; environment XPU_TIMER_SIM_SLOW_GPU_RANK) (default: -1)",
        "--slow-gpu-factor SLOW_GPU_FACTOR slowdown of --slow-gpu-rank's GPU (> 0) (default: 1.0)",
        "(-1: none; environment XPU_TIMER_SIM_SLOW_LINK_RANK) (default: -1)",
        "--slow-link-factor SLOW_LINK_FACTOR slowdown of --slow-link-rank's links (> 0) "
        "(default: 1.0)"}) {
    EXPECT_NE(help.find(text), std::string::npos) << text << "\n" << help;
  }
  Child bad_py({python3(), SIM_TRAINER_PY, "--slow-gpu-factor", "-2"});
  EXPECT_EQ(bad_py.wait_exit_code(20s), 2) << bad_py.output();
  EXPECT_NE(bad_py.output().find("want a finite factor > 0"), std::string::npos) << bad_py.output();
}

}  // namespace
