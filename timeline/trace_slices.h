// The trace builder's intermediate form (private to timeline/): every record
// placed on a track with its times on the common axis, before it is written
// as JSON. trace_builder.cc places and writes the slices, trace_processes.cc
// names and orders the ranks' processes, trace_overlays.cc adds what joins or
// marks the slices (flows, the hang verdict, missing ranks).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "timeline/dump_loader.h"
#include "timeline/hang_markers.h"
#include "timeline/trace_clock.h"
#include "timeline/trace_sink.h"

namespace xpu_timer::timeline {

enum class Place {
  kGpu,      // GPU start and end known
  kEndOnly,  // only the end event: from when it could start to its end
  kPending,  // not completed at dump time: from when it could start to the trace end
  kHost,     // no GPU time: a zero-length slice at its launch on its stream's track
  kRange,    // a host-side region (NVTX range, training step): its host start and end
};

struct Slice {
  size_t rank_index = 0;  // into LoadedDumps::ranks
  int tid = 0;
  Place place = Place::kHost;
  int64_t start = 0, end = 0;  // common axis, ns; start <= end
  const recorder::RecordData* record = nullptr;

  // Unsigned: hostile times may lie further apart than an int64 reaches.
  uint64_t span() const { return static_cast<uint64_t>(end) - static_cast<uint64_t>(start); }
};

struct TraceContext {
  const LoadedDumps& dumps;
  const TraceClock& clock;
  const HangMarks& marks;
  std::vector<Slice> slices;
  // Per rank index: (device, stream) -> tid.
  std::vector<std::map<std::pair<int32_t, uint64_t>, int>> tracks;
  int64_t t0 = 0, end = 0;  // the trace's first and last instants on the common axis
  // A hang.json said "no hang": pending work was merely in flight, not stuck.
  bool no_hang_said = false;

  // Every time drawn is >= t0 (the earliest), so the unsigned difference is
  // exact where a signed one could overflow.
  double us(int64_t t) const {
    return static_cast<double>(static_cast<uint64_t>(t) - static_cast<uint64_t>(t0)) / 1000.0;
  }
  int pid(size_t rank_index) const { return dumps.ranks[rank_index].rank + 1; }
};

// A metadata ("M") event: process_name, thread_name and their sort indexes.
nlohmann::json metadata_event(const char* name, int pid, int tid, nlohmann::json args);
// The process of every dumped rank and of every missing rank without a dump:
// "rank 2 (tp0 dp1) - MISSING", "rank 0 - stuck in AllReduce #6", sorted
// missing ranks first, then stuck ones, each group by rank. `labels`: the
// --groups label per rank index, or empty.
void append_processes(const TraceContext& ctx, const std::vector<std::string>& labels,
                      TraceSink* sink);
// Flow arrows joining each collective across ranks; returns how many arrows.
size_t append_flows(const TraceContext& ctx, TraceSink* sink);
// The hang verdict instants and the missing-rank markers; a marker with no
// slice to sit on goes on the rank's "hang marks" track (kHostTid).
void append_hang_overlays(const TraceContext& ctx, TraceSink* sink);

}  // namespace xpu_timer::timeline
