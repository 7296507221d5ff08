// The straggler analysis replayed over flight-recorder dumps: the records of
// one node's dump folders handed to the very analysis the supervisor runs
// live (supervisor/analysis/straggler_feed.h, straggler.h), in the order they
// completed, with a verdict taken every second of recorded time, as the
// supervisor takes one every second of its poll. What a dump cannot carry is
// said, not guessed: communicator names (not in a ring) are absent, and the
// members of a communicator are the ranks whose records name it. The link
// transfer meter (supervisor/analysis/link_transfer.h) is replayed the same
// way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "supervisor/analysis/link_transfer.h"
#include "supervisor/analysis/straggler.h"
#include "timeline/dump_loader.h"

namespace xpu_timer::slow_replay {

struct ReplayVerdict {
  uint64_t at_ns = 0;    // the recorded CLOCK_MONOTONIC time it was taken at
  double at_unix_s = 0;  // the same instant in wall-clock time (from the rings' headers)
  supervisor::SlowReport report;
};

struct ReplayResult {
  std::vector<ReplayVerdict> verdicts;  // oldest first
  size_t records = 0;                   // records fed (each once, duplicates across dumps dropped)
  std::vector<std::string> warnings;
};

// One record of a dump as the live ring feed would hand it over: when it
// became final, and whose it is.
struct FinalRecord {
  uint64_t final_ns = 0;
  int rank = 0;
  const recorder::RecordData* d = nullptr;  // into the LoadedDumps
};
struct FinalRecords {
  std::vector<FinalRecord> records;  // by final_ns; each record once across dumps
  int64_t mono_to_unix_ns = 0;       // the rings' CLOCK_MONOTONIC to wall-clock time
  std::vector<std::string> warnings;
};
// The records of `dumps` (of one node) in the order they became final. They
// point into `dumps`, which must outlive them: a temporary is refused.
FinalRecords records_in_final_order(const std::vector<timeline::LoadedDumps>& dumps);
FinalRecords records_in_final_order(std::vector<timeline::LoadedDumps>&& dumps) = delete;

// Replays `dumps` (one LoadedDumps per folder, of one node: their clocks must
// agree) through a StragglerAnalyzer with `options`. Verdicts are taken every
// `period_ns` while records flow, and once after the last; a stretch of time
// no dump covers is skipped, not judged empty.
ReplayResult replay(const std::vector<timeline::LoadedDumps>& dumps,
                    const supervisor::StragglerOptions& options,
                    uint64_t period_ns = 1'000'000'000);

// Whether a replay reads `d`: every collective (the members of a
// communicator, the link transfer meter) and what the straggler feed takes
// (straggler_feed_reads: timed GEMMs and copies, GC pauses, DataLoader waits).
bool replay_reads(const recorder::RecordData& d);

// Writes each rank's dump of `dumps` to `out_dir` (created; same file
// names) with only the records replay_reads() keeps, its names and call
// sites whole: a recording the replay judges exactly as the original, at a
// fraction of its size (a host-bound job's ring is mostly sampled-out
// operations). False with `error` on the first file not written.
bool write_slim_dumps(const timeline::LoadedDumps& dumps, const std::string& out_dir,
                      std::string* error);

// The link transfer meter over every record of `dumps`, its window all of
// them, reported once every collective they hold settled.
supervisor::TransferReport replay_transfers(const std::vector<timeline::LoadedDumps>& dumps);

}  // namespace xpu_timer::slow_replay
