// Simulated GEMM duration: 2*batch*m*n*k flops at XPU_TIMER_SIM_TFLOPS
// (default 100 TFLOP/s). Header-only: cuBLAS and cuBLASLt each keep a copy.
//
// XPU_TIMER_SIM_SLOW_GEMM=M,N,K with XPU_TIMER_SIM_SLOW_GEMM_FACTOR=F makes
// every GEMM of that m, n, k (any API, batch or transposes) take F times as
// long in every process that has them: one slowed shape, for the tests of the
// GEMM replay and of the timeline diff. Unlike the slow-rank knobs
// (slow_rank.h) it applies to every rank.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/env_config.h"
#include "common/log.h"

namespace xpu_timer::simgpu {

struct SlowGemm {
  long m = 0, n = 0, k = 0;  // 0: no shape slowed
  double factor = 1.0;
};

inline SlowGemm slow_gemm_from_env() {
  SlowGemm s;
  const std::string shape = env_string("XPU_TIMER_SIM_SLOW_GEMM", "");
  if (shape.empty()) return s;
  const double factor = env_double("XPU_TIMER_SIM_SLOW_GEMM_FACTOR", 1.0);
  char tail = 0;
  if (std::sscanf(shape.c_str(), "%ld,%ld,%ld%c", &s.m, &s.n, &s.k, &tail) != 3 || s.m <= 0 ||
      s.n <= 0 || s.k <= 0 || !(factor > 0 && std::isfinite(factor))) {
    XPU_TIMER_LOG_WARN(
        "simgpu: XPU_TIMER_SIM_SLOW_GEMM wants M,N,K and _FACTOR a finite "
        "number > 0; ignored");
    return SlowGemm{};
  }
  s.factor = factor;
  XPU_TIMER_LOG_INFO("simgpu: GEMMs of m=%ld n=%ld k=%ld take %gx their simulated time", s.m, s.n,
                     s.k, factor);
  return s;
}

inline uint64_t gemm_duration_ns(int64_t m, int64_t n, int64_t k, int64_t batch) {
  static const double tflops = [] {
    const double v = env_double("XPU_TIMER_SIM_TFLOPS", 100.0);
    return v > 0 ? v : 100.0;
  }();
  static const SlowGemm slow = slow_gemm_from_env();
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
  const double flops = 2.0 * static_cast<double>(batch) * static_cast<double>(m) *
                       static_cast<double>(n) * static_cast<double>(k);
  const double ns = flops / (tflops * 1e3);  // TFLOP/s == 1e3 flop/ns
  if (m == slow.m && n == slow.n && k == slow.k) {
    return static_cast<uint64_t>(ns * slow.factor + 0.5);
  }
  return static_cast<uint64_t>(ns);
}

}  // namespace xpu_timer::simgpu
