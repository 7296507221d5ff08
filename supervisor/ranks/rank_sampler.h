// Turns the registry's records into a Snapshot for the hang detector: reads
// each page (seqlock, SIGBUS-guarded), probes the process, and adds the
// expected ranks that never registered. Called by the poll loop (asio
// thread) and by HTTP handlers; reentrant.
#pragma once

#include <functional>
#include <vector>

#include "supervisor/ranks/rank_registry.h"
#include "supervisor/analysis/rank_sample.h"

namespace xpu_timer::supervisor {

// `scratch` is a caller-owned snapshot (it holds a ~72 KB page copy: reuse it).
// One read of `page` into `scratch`. A busy seqlock means the rank's
// background thread was descheduled inside its write (a loaded machine): its
// page is not stale, only mid-update, so it is read again after `pause()`
// (1 ms in sample_rank), up to 10 times, rather than taken for a rank without
// a page in this snapshot (a hang verdict would then leave that rank out).
void read_page(const proto::StatusPageFile& page, proto::StatusSnapshot* scratch,
               const std::function<void()>& pause);
RankSample sample_rank(const RankRecord& record, proto::StatusSnapshot* scratch);

Snapshot take_snapshot(const std::vector<RankRecord>& records, proto::StatusSnapshot* scratch);

uint64_t monotonic_now_ns();
double unix_now_s();

}  // namespace xpu_timer::supervisor
