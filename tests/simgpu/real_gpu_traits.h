// What real GPUs do that the straggler analysis must not mistake for a slow
// rank (tests/data/real-gpu/README.md), reproduced by the simulated runtime:
//
//   XPU_TIMER_SIM_RANK_SKEW_US=S   every rank's stream resumes a fixed time
//       after the event it waits for: rank r by S x ((5r + 3) mod W) / (W - 1)
//       microseconds (W = WORLD_SIZE), so one rank reaches every collective
//       S/(W-1) after the next latest, always, as a real GPU is last by tens
//       to hundreds of microseconds for reasons of topology and clocks.
//   XPU_TIMER_SIM_GPU_SHARE_DIR=DIR   while the file DIR/gpu-<device> exists,
//       every kernel of this process on that device takes (1 + L) times its
//       time, L read from the file (a number > 0; 1 when it holds none): a
//       second process sharing the GPU (xpu_timer_sim_gpu_hog creates and
//       removes the file). Checked at most every 10 ms of the stream's time.
//
// Launches running ahead of the GPU are the trainers' --sync-lag.
// Header-only: the runtime keeps the one copy; nothing of it is exported.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/env_config.h"

namespace xpu_timer::simgpu {

// This process's fixed delay after a cross-stream wait, in ns (0: none).
inline uint64_t rank_skew_ns() {
  static const uint64_t skew = [] {
    const double us = env_double("XPU_TIMER_SIM_RANK_SKEW_US", 0);
    const RankIdentity id = rank_identity_from_env();
    if (!(us > 0) || !std::isfinite(us) || id.world_size < 2 || id.rank < 0) return uint64_t{0};
    const double share = static_cast<double>((5 * id.rank + 3) % id.world_size) /
                         static_cast<double>(id.world_size - 1);
    return static_cast<uint64_t>(us * 1000 * share + 0.5);
  }();
  return skew;
}

// The share file of `device`, or "" when XPU_TIMER_SIM_GPU_SHARE_DIR is unset.
inline std::string gpu_share_file(int device) {
  const std::string dir = env_string("XPU_TIMER_SIM_GPU_SHARE_DIR", "");
  return dir.empty() ? std::string() : dir + "/gpu-" + std::to_string(device);
}

// How many times its time a kernel of `device` starting at `now_ns` takes:
// 1 + the load of a second process on it. The file is looked at again once
// 10 ms of stream time have passed since the last look (per device, racy
// between streams on purpose: either value is a recent one).
inline double gpu_share_factor(int device, uint64_t now_ns) {
  static const std::string dir = env_string("XPU_TIMER_SIM_GPU_SHARE_DIR", "");
  if (dir.empty() || device < 0 || device >= 64) return 1.0;
  static std::atomic<uint64_t> checked_ns[64];
  static std::atomic<double> factor[64];
  constexpr uint64_t kRecheckNs = 10'000'000;
  const uint64_t last = checked_ns[device].load(std::memory_order_relaxed);
  if (last != 0 && now_ns < last + kRecheckNs)
    return factor[device].load(std::memory_order_relaxed);
  checked_ns[device].store(now_ns, std::memory_order_relaxed);
  double f = 1.0;
  const std::string path = dir + "/gpu-" + std::to_string(device);
  if (FILE* file = std::fopen(path.c_str(), "re")) {
    double load = 0;
    f = std::fscanf(file, "%lf", &load) == 1 && load > 0 && std::isfinite(load) ? 1.0 + load : 2.0;
    std::fclose(file);
  }
  factor[device].store(f, std::memory_order_relaxed);
  return f;
}

}  // namespace xpu_timer::simgpu
