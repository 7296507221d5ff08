// Parts of the injected library that a benchmark may switch off one by one
// in a running process, so that the cost of watching a job can be split
// among them by steps alternated with the part on and off in one process
// (bench/gpu/overhead.py --switch; the whole library is switched by
// xpu_timer_bench_set_paused). A part switched off behaves as if it did not
// exist: what it would have measured is missing, nothing else changes. Never
// switched in production: every part is on unless a benchmark says otherwise.
//
// Threads: any thread may switch (xpu_timer_bench_set_part); the hooks and
// the Poller read the word with a relaxed load at the point of use.
#pragma once

#include <atomic>
#include <cstdint>

namespace xpu_timer::inject {

enum class BenchPart : uint32_t {
  kPollerPasses = 1u << 0,      // the Poller's whole pass (drain, queries, page)
  kEventQueries = 1u << 1,      // the Poller's cudaEventQuery/ElapsedTime of operations
  kCollectiveEvents = 1u << 2,  // the two events a collective records on its stream
  kGpuClock = 1u << 3,          // mapping GPU times onto the host clock (arrivals)
  kCallSites = 1u << 4,         // reading a collective's Python call site
  kProfilerPlugin = 1u << 5,    // what NCCL's profiler-plugin callbacks do
  kProfilerInNccl = 1u << 6,    // NCCL's whole profiler path (its activation mask 0)
  kTimedOps = 1u << 7,          // timing GEMMs and copies (their events on the compute stream)
  kOpRecords = 1u << 8,         // a GEMM's or copy's sampling and record (the hook only describes)
  kLaunchCount = 1u << 9,       // counting kernel launches
  kEndQueryFirst = 1u << 10,    // the Poller asks a recorded end event first (off: start first)
};

// The parts switched off (BenchPart bits); 0 in every process not benchmarked.
inline std::atomic<uint32_t> g_bench_parts_off{0};

inline bool bench_part_off(BenchPart part) {
  return (g_bench_parts_off.load(std::memory_order_relaxed) & static_cast<uint32_t>(part)) != 0;
}

// Switches the part called `name` (see kBenchPartNames in bench_parts.cc) on
// or off; false for an unknown name.
bool set_bench_part(const char* name, bool on);

// Sets NCCL's profiler activation mask to ours (on) or to nothing: NCCL
// reads it for every collective (nccl_profiler_plugin.cc).
void nccl_profiler_switch(bool on);

// Sets NCCL's activation mask again from what is switched now (the
// profiler_in_nccl part, the KernelCh probe); false when NCCL never
// initialised our plugin in this process.
bool nccl_profiler_refresh_mask();

}  // namespace xpu_timer::inject
