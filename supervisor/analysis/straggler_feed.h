// What the straggler analysis takes from a flight-recorder record: the one
// mapping from records to StragglerAnalyzer calls, used by the supervisor
// live (slow_rank_monitor.h, each record once when it became final) and by
// xpu_timer_slow_replay over dump folders, so that a replay of a job's dumps
// judges exactly what the live analysis judged.
#pragma once

#include <cstdint>

#include "common/recorder_ring.h"
#include "supervisor/analysis/straggler.h"

namespace xpu_timer::supervisor {

// Completed collectives with both markers (arrival and end), timed GEMMs
// (duration by shape, and whether the GPU waited for their launch), timed
// copies (the same wait), GC pauses, DataLoader waits and the host's time
// blocked on its GPU (launch samples that measured it); nothing else.
void feed_straggler_record(StragglerAnalyzer* analyzer, int rank, const recorder::RecordData& d,
                           uint64_t now_ns);

// Whether feed_straggler_record takes anything from `d` (what a slimmed
// recording must keep: xpu_timer_slow_replay --slim).
bool straggler_feed_reads(const recorder::RecordData& d);

}  // namespace xpu_timer::supervisor
