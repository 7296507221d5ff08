// The slow-rank knobs of the simulated GPU, for tests of straggler detection
// (the trainers' --slow-gpu-rank and --slow-link-rank set them):
//   XPU_TIMER_SIM_SLOW_GPU_RANK / _FACTOR    kernels of that rank (libcudart)
//   XPU_TIMER_SIM_SLOW_LINK_RANK / _FACTOR   transfers of that rank (libnccl)
// Every rank of a job gets the same values (the launcher passes its
// environment to all of them); a process applies the factor only when its
// RANK is the one named, so the knob works for any program under
// xpu_timer_sim_launch, not just the trainers. Header-only: each library keeps
// its own copy and exports none of it.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/env_config.h"
#include "common/log.h"

namespace xpu_timer::simgpu {

// FACTOR when this process's RANK is RANK's value, else 1 (also for a factor
// that is not a finite number > 0). Read it once: the environment is fixed by then.
// `what` completes the line that says the knob is on: "rank 1: <what> take 3x ...".
inline double slow_factor_of_this_rank(const char* rank_var, const char* factor_var,
                                       const char* what) {
  const long slow_rank = env_long(rank_var, -1);
  if (slow_rank < 0 || rank_identity_from_env().rank != slow_rank) return 1.0;
  const double factor = env_double(factor_var, 1.0);
  if (!(factor > 0 && std::isfinite(factor))) {
    XPU_TIMER_LOG_WARN("simgpu: %s is not a finite number > 0; %s is ignored", factor_var,
                       rank_var);
    return 1.0;
  }
  XPU_TIMER_LOG_INFO("simgpu: rank %ld: %s take %gx their simulated time (%s)", slow_rank, what,
                     factor, rank_var);
  return factor;
}

// `ns` times `factor`, rounded to the nearest nanosecond.
inline uint64_t scale_ns(uint64_t ns, double factor) {
  if (factor == 1.0) return ns;
  return static_cast<uint64_t>(static_cast<double>(ns) * factor + 0.5);
}

}  // namespace xpu_timer::simgpu
