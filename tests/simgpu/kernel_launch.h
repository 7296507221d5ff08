// Puts a simulated kernel on a stream, or into the stream's capture.
#pragma once

#include <cstdint>

#include "tests/simgpu/stream.h"

namespace xpu_timer::simgpu {

// A task that keeps the stream busy for `duration_ns` of simulated time.
StreamTask kernel_task(uint64_t duration_ns);
// Runs a kernel of `duration_ns` (times this rank's gpu_factor()) on `stream`,
// or records it unscaled into the stream's capture (scaled when replayed).
void launch_kernel(Stream& stream, uint64_t duration_ns);
// How many times slower this rank's kernels run: XPU_TIMER_SIM_SLOW_GPU_FACTOR
// on rank XPU_TIMER_SIM_SLOW_GPU_RANK, else 1 (slow_rank.h). Kernels, GEMMs
// and memsets take it; copies (copy engines) and NCCL (the links) do not.
double gpu_factor();
// Kernels recorded by captures so far (process-wide).
uint64_t captured_kernel_count();
// Simulated time of a host<->device copy of `bytes` (XPU_TIMER_SIM_COPY_GBPS, default 25).
uint64_t copy_duration_ns(uint64_t bytes);

}  // namespace xpu_timer::simgpu
