#include "tests/simgpu/kernel_launch.h"

#include <atomic>

#include "common/env_config.h"
#include "tests/simgpu/real_gpu_traits.h"
#include "tests/simgpu/sim_clock.h"
#include "tests/simgpu/slow_rank.h"

namespace xpu_timer::simgpu {
namespace {
std::atomic<uint64_t> g_captured{0};
}  // namespace

StreamTask kernel_task(uint64_t duration_ns) {
  return [duration_ns](uint64_t start) {
    const uint64_t end = start + duration_ns;
    sleep_until_ns(end);
    return end;
  };
}

void launch_kernel(Stream& stream, uint64_t duration_ns) {
  // A capture may begin between the two calls: retry until one takes it.
  for (;;) {
    if (stream.capture_kernel(duration_ns)) {
      g_captured.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const int device = stream.device();
    const uint64_t scaled = scale_ns(duration_ns, gpu_factor());
    // A second process on this GPU (real_gpu_traits.h) slows what runs while it is there.
    const bool queued = stream.enqueue([device, scaled](uint64_t start) {
      const uint64_t end = start + scale_ns(scaled, gpu_share_factor(device, start));
      sleep_until_ns(end);
      return end;
    });
    if (queued) return;
  }
}

double gpu_factor() {
  static const double factor = slow_factor_of_this_rank("XPU_TIMER_SIM_SLOW_GPU_RANK",
                                                        "XPU_TIMER_SIM_SLOW_GPU_FACTOR", "kernels");
  return factor;
}

uint64_t captured_kernel_count() { return g_captured.load(std::memory_order_relaxed); }

uint64_t copy_duration_ns(uint64_t bytes) {
  static const double gbps = [] {
    const double v = env_double("XPU_TIMER_SIM_COPY_GBPS", 25.0);
    return v > 0 ? v : 25.0;
  }();
  return 2000 + static_cast<uint64_t>(static_cast<double>(bytes) / gbps);  // GB/s == bytes/ns
}

}  // namespace xpu_timer::simgpu
