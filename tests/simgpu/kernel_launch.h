// Puts a simulated kernel on a stream, or into the stream's capture.
#pragma once

#include <cstdint>

#include "tests/simgpu/stream.h"

namespace xpu_timer::simgpu {

// A task that keeps the stream busy for `duration_ns` of simulated time.
StreamTask kernel_task(uint64_t duration_ns);
void launch_kernel(Stream& stream, uint64_t duration_ns);
// Kernels recorded by captures so far (process-wide).
uint64_t captured_kernel_count();
// Simulated time of a host<->device copy of `bytes` (XPU_TIMER_SIM_COPY_GBPS, default 25).
uint64_t copy_duration_ns(uint64_t bytes);

}  // namespace xpu_timer::simgpu
