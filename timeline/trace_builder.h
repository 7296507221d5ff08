// Converts loaded flight-recorder dumps into a Chrome Trace Event document
// (the JSON that Perfetto UI, chrome://tracing and speedscope load):
//
//  - one process per rank ("rank N", sorted by rank; pid = rank + 1, because
//    Perfetto treats pid 0 as the kernel's idle process), with one thread per
//    (device, stream) named "GPU<device> stream 0x<stream>" and a host thread
//    for what has no GPU time (sampled-out and failed launches);
//  - an "X" slice per operation with GPU times, its fields in args, with the
//    achieved TFLOP/s (GEMM) or nccl-tests bus bandwidth (NCCL);
//  - operations still pending at dump time drawn from when they could start
//    (ready_ns, else launch_ns) to the end of the trace, named "STUCK <op>"
//    ("PENDING <op>" when hang.json says there was no hang), cname "terrible";
//  - flow arrows ("s" -> "f", binding to the enclosing slices) joining each
//    collective (comm_hash, seq) across its ranks, in rank order;
//  - the hang verdict as a global instant, and each missing rank's last
//    completed operation marked "rank 2 missing: last completed AllReduce #5".
// Times are microseconds from the earliest record (trace_clock.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "timeline/dump_loader.h"
#include "timeline/parallel_groups.h"
#include "timeline/trace_sink.h"

namespace xpu_timer::timeline {

struct TraceOptions {
  std::optional<ParallelLayout> layout;  // --groups: label ranks with their coordinates
};

constexpr int kHostTid = 1;  // stream threads are 2, 3, ... in (device, stream) order
inline int trace_pid(int rank) { return rank + 1; }

struct TraceSummary {
  size_t events = 0;
  size_t flows = 0;  // arrows joining collectives across ranks
};

// Writes the document {"traceEvents": [...], "otherData": {...}} into
// `sink`. Problems that do not stop the trace (a layout that does not fit the
// job, records without a usable time) are appended to *warnings.
TraceSummary write_trace(const LoadedDumps& dumps, const TraceOptions& options, TraceSink* sink,
                         std::vector<std::string>* warnings);
// The same document as a JSON value (tests, small dumps).
nlohmann::json build_trace(const LoadedDumps& dumps, const TraceOptions& options,
                           std::vector<std::string>* warnings);

}  // namespace xpu_timer::timeline
