// Simulated GEMM duration: 2*batch*m*n*k flops at XPU_TIMER_SIM_TFLOPS
// (default 100 TFLOP/s). Header-only: cuBLAS and cuBLASLt each keep a copy.
#pragma once

#include <cstdint>

#include "common/env_config.h"

namespace xpu_timer::simgpu {

inline uint64_t gemm_duration_ns(int64_t m, int64_t n, int64_t k, int64_t batch) {
  static const double tflops = [] {
    const double v = env_double("XPU_TIMER_SIM_TFLOPS", 100.0);
    return v > 0 ? v : 100.0;
  }();
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
  const double flops = 2.0 * static_cast<double>(batch) * static_cast<double>(m) *
                       static_cast<double>(n) * static_cast<double>(k);
  return static_cast<uint64_t>(flops / (tflops * 1e3));  // TFLOP/s == 1e3 flop/ns
}

}  // namespace xpu_timer::simgpu
