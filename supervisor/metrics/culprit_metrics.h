// Where the culprits of the standing verdict are, as a Prometheus family
// appended to GET /metrics (docs/metrics.md "Hangs and stalls"), so that an
// alert can say it (deploy/prometheus/xpu_timer_alerts.yml):
//   xpu_timer_hang_culprit_info{rank,where,job_name} 1
// one series per missing, unresponsive or stalled rank of this node whose
// place is known (RankVerdict::where, "f (a.py:1) <- g (a.py:2)"), present
// only while the verdict stands. Bounded: a label value is a short line and
// at most kMaxCulpritSeries series are written, lowest ranks first (a stall
// of a node's eight ranks fits). Pure text rendering; any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/code_frame.h"

#include "supervisor/analysis/hang_detector.h"
#include "supervisor/ranks/rank_registry.h"

namespace xpu_timer::supervisor {

constexpr size_t kMaxCulpritSeries = 8;

// `records`: the ranks registered on this node (each node exports its own,
// as for xpu_timer_rank_state).
std::string culprit_metrics_text(const HangReport& report, const std::vector<RankRecord>& records,
                                 const std::string& job_name);

// The odd ranks of this node's collective mismatches, where each was when the
// stacks of its latest mismatch were taken (CollectiveStatus::odd_places):
//   xpu_timer_mismatch_culprit_info{rank,where,job_name} 1
// for the rest of the job, as xpu_timer_rank_state{state="mismatch"}; at most
// kMaxCulpritSeries series, lowest ranks first.
std::string mismatch_culprit_metrics_text(const std::map<int, std::vector<CodeFrame>>& places,
                                          const std::string& job_name);

}  // namespace xpu_timer::supervisor
