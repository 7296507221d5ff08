// Turns the registry's records into a Snapshot for the hang detector: reads
// each page (seqlock, SIGBUS-guarded), probes the process, and adds the
// expected ranks that never registered. Called by the poll loop (asio
// thread) and by HTTP handlers; reentrant.
#pragma once

#include <vector>

#include "supervisor/rank_registry.h"
#include "supervisor/rank_sample.h"

namespace xpu_timer::supervisor {

// `scratch` is a caller-owned snapshot (it holds a ~72 KB page copy: reuse it).
RankSample sample_rank(const RankRecord& record, proto::StatusSnapshot* scratch);

Snapshot take_snapshot(const std::vector<RankRecord>& records, proto::StatusSnapshot* scratch);

uint64_t monotonic_now_ns();
double unix_now_s();

}  // namespace xpu_timer::supervisor
