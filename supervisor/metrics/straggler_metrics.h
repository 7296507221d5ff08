// The straggler verdict (analysis/straggler.h) as Prometheus families,
// appended to GET /metrics (docs/metrics.md "Slow ranks"):
//   xpu_timer_rank_late_share            gauge, per rank: share of its collectives it arrived last at
//   xpu_timer_rank_late_seconds          gauge, per rank: its median margin when last
//   xpu_timer_rank_wait_caused_seconds_total  counter, per rank: its peers' waits for it
//   xpu_timer_straggler                  gauge 1, per straggler, labelled with its cause and node
//   xpu_timer_stragglers                 gauge, the job's count
// Pure text rendering; any thread.
#pragma once

#include <string>

#include "supervisor/analysis/straggler.h"

namespace xpu_timer::supervisor {

std::string straggler_metrics_text(const SlowReport& report, const std::string& job_name);

}  // namespace xpu_timer::supervisor
