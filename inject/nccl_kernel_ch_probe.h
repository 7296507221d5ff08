// A benchmark's probe of NCCL's kernel-channel profiler events
// (ncclProfileKernelCh, profiler ABI v5): would NCCL's own GPU timestamps of
// a collective's kernel replace the two CUDA events our hook records around
// it? Off in every process unless a benchmark switches it on
// (xpu_timer_bench_set_kernel_ch): then the plugin asks NCCL for Coll and
// KernelCh events, and each KernelCh start and stop that NCCL's proxy
// thread reports is kept here with the host clocks read at the report, so
// that bench/gpu/overhead.py can measure what the events cost (its
// `kernel_ch` arm) and how late they arrive (xpu_timer_bench_kernel_ch_dump).
//
// Threads: NCCL's proxy progress threads note; any thread switches and dumps.
// Noting never blocks and never allocates: a fixed ring, the oldest samples
// overwritten.
#pragma once

#include <atomic>
#include <cstdint>

namespace xpu_timer::inject {

// Whether the plugin asks NCCL for KernelCh events now.
inline std::atomic<bool> g_kernel_ch_on{false};

inline bool kernel_ch_on() { return g_kernel_ch_on.load(std::memory_order_relaxed); }

struct KernelChSample {
  uint64_t gpu_ns;        // NCCL's timestamp: the GPU's globaltimer
  uint64_t realtime_ns;   // CLOCK_REALTIME when the callback ran
  uint64_t monotonic_ns;  // CLOCK_MONOTONIC when the callback ran
  uint32_t channel;       // the channel id
  uint32_t stop;          // 0 start, 1 stop
};

// Called from the plugin's callbacks (a KernelCh start, or its stop state).
void kernel_ch_note(bool stop, uint32_t channel, uint64_t gpu_ns);

// Writes the ring's samples, oldest first, as text lines
// "start|stop channel gpu_ns realtime_ns monotonic_ns" to `path`; the count
// written, or -1 when the file cannot be written.
long kernel_ch_dump(const char* path);

}  // namespace xpu_timer::inject
