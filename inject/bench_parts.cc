#include "inject/bench_parts.h"

#include <cstring>

namespace xpu_timer::inject {
namespace {

struct PartName {
  const char* name;
  BenchPart part;
};

// The names bench/gpu/overhead.py --switch passes.
constexpr PartName kBenchPartNames[] = {
    {"poller", BenchPart::kPollerPasses},
    {"queries", BenchPart::kEventQueries},
    {"collective_events", BenchPart::kCollectiveEvents},
    {"gpu_clock", BenchPart::kGpuClock},
    {"call_sites", BenchPart::kCallSites},
    {"profiler_plugin", BenchPart::kProfilerPlugin},
    {"profiler_in_nccl", BenchPart::kProfilerInNccl},
    {"timed_ops", BenchPart::kTimedOps},
    {"op_records", BenchPart::kOpRecords},
    {"launch_count", BenchPart::kLaunchCount},
    {"end_query_first", BenchPart::kEndQueryFirst},
};

}  // namespace

bool set_bench_part(const char* name, bool on) {
  if (name == nullptr) return false;
  for (const PartName& p : kBenchPartNames) {
    if (std::strcmp(p.name, name) != 0) continue;
    const auto bit = static_cast<uint32_t>(p.part);
    if (on) {
      g_bench_parts_off.fetch_and(~bit, std::memory_order_relaxed);
    } else {
      g_bench_parts_off.fetch_or(bit, std::memory_order_relaxed);
    }
    if (p.part == BenchPart::kProfilerInNccl) nccl_profiler_switch(on);
    return true;
  }
  return false;
}

}  // namespace xpu_timer::inject
