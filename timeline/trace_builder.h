// Converts loaded flight-recorder dumps into a Chrome Trace Event document
// (the JSON that Perfetto UI, chrome://tracing and speedscope load):
//
//  - one process per rank (pid = rank + 1, because Perfetto treats pid 0 as
//    the kernel's idle process) named with its part in a hang, "rank 2 -
//    MISSING", "rank 0 - stuck in AllReduce #6", and sorted culprits first
//    (trace_processes.cc), with one thread per (device, stream) that has
//    slices, "GPU<device> stream 0x<stream>";
//  - an "X" slice per operation, named by what it is, not by which call
//    ("AllReduce", "MemcpyH2D", a GEMM with its dtype and shape "GemmEx bf16
//    4096x4096x1024"), so that a viewer's per-name statistics add up the
//    calls of one kind; the call's fields (seq, comm, bytes, shape, dtype)
//    in args, with the achieved TFLOP/s (GEMM) or nccl-tests bus bandwidth;
//  - operations still pending at dump time drawn from when they could start
//    (ready_ns, else launch_ns) to the end of the trace, named "STUCK <op>"
//    ("PENDING <op>" when hang.json says there was no hang);
//  - sampled-out operations (launched, no GPU time) as a counter per stream,
//    "<stream track> launches (sampled out)", or with sampled_out_slices as
//    zero-length "sampled out: <op>" slices at their launch on that track;
//    failed launches as zero-length "FAILED <op>" slices there;
//  - flow arrows ("s" -> "f", binding to the enclosing slices) joining each
//    collective (comm_hash, seq) across its ranks, in rank order;
//  - the hang verdict as a global instant, and each missing rank's last
//    completed operation marked "rank 2 missing: last completed AllReduce #5".
// Only what Perfetto's JSON importer honours carries meaning: names, args,
// process_name / thread_name and their sort indexes (never cname or
// process_labels, which it ignores). Times are microseconds from the earliest
// record (trace_clock.h).
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
  bool sampled_out_slices = false;       // --sampled-out-slices: a slice per sampled-out launch
};

// The "hang marks" thread of a rank whose missing-rank mark has no slice to
// sit on; stream threads are 2, 3, ... in (device, stream) order.
constexpr int kHostTid = 1;
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
