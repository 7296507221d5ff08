// Turns the registry's records into a Snapshot for the hang detector: reads
// each page (seqlock, SIGBUS-guarded), probes the process, and adds the
// expected ranks that never registered. Called by the poll loop (asio
// thread) and by HTTP handlers; reentrant.
#pragma once

#include <functional>
#include <vector>

// A Snapshot's times are common/clock.h's (monotonic_ns, unix_now_s).
#include "common/clock.h"
#include "supervisor/analysis/rank_sample.h"
#include "supervisor/ranks/rank_registry.h"

namespace xpu_timer::supervisor {

// `scratch` is a caller-owned snapshot (it holds a ~72 KB page copy: reuse it).
// One read of `page` into `scratch`, the one way the supervisor reads a page
// (the poll and /metrics). A busy seqlock means the rank's background thread
// was descheduled inside its write (a loaded machine): its page is not stale,
// only mid-update, so it is read again after `pause()`, up to 10 times, rather
// than taken for a rank without a page this time (a hang verdict would then
// leave that rank out, a scrape would drop its series).
void read_page(const proto::StatusPageFile& page, proto::StatusSnapshot* scratch,
               const std::function<void()>& pause);
// The pause between those rereads everywhere but in tests: 1 ms.
void pause_for_busy_page();
RankSample sample_rank(const RankRecord& record, proto::StatusSnapshot* scratch);

Snapshot take_snapshot(const std::vector<RankRecord>& records, proto::StatusSnapshot* scratch);

}  // namespace xpu_timer::supervisor
