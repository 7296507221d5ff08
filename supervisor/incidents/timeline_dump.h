// Dumps of the ranks' flight recorders (common/recorder_ring.h): on every
// hang verdict, every crash or death, and on POST /dump/timeline, each
// rank's ring is copied out of its shared mapping into
// `<dump-dir>/timeline-<time>-<reason>/RRRRR-WWWWW.timeline`, with the hang
// report of that moment as hang.json and the Perfetto-loadable trace
// (timeline.json, timeline/) converted from them.
//
// Reading a ring needs nothing from the rank: it works while the rank is
// stopped by ptrace, hung in a host call, holds the GIL for ever, or is dead
// (the supervisor mapped its ring at registration; the mapping outlives the
// file). Threads: the asio thread or an HTTP thread; each call is
// independent (its own folder).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/recorder_ring.h"

namespace xpu_timer::supervisor {

struct TimelineTarget {
  int rank = 0;
  int world_size = 1;
  std::shared_ptr<const recorder::RingReader> ring;  // nullptr: the rank has no recorder
};

struct TimelineDumpResult {
  bool ok = false;                  // the folder exists and holds at least one ring
  std::string dir;                  // the folder written
  std::string trace;                // timeline.json, when the conversion worked
  std::vector<int> ranks;           // ranks whose ring was written
  uint64_t records = 0;             // records written, all ranks
  std::vector<std::string> errors;  // one line per rank or step that failed
};

// `reason`: "hang", "crash", "request". `hang_json`: the hang report to store
// beside the rings (empty: none). Never throws.
TimelineDumpResult dump_timelines(const std::vector<TimelineTarget>& targets,
                                  const std::string& dump_dir, const std::string& reason,
                                  const std::string& hang_json, double now_unix_s);

}  // namespace xpu_timer::supervisor
