// GET /slow: the straggler verdict (straggler.h) as JSON. Pure.
// {"window_s", "stragglers": [{"rank", "node", "cause", "late_share",
//  "median_late_s", "wait_caused_s", "evidence", "summary", ...}],
//  "summary", "ranks": [...], "collectives_judged"}; docs/usage.md "Slow
// ranks" describes every key.
#pragma once

#include <nlohmann/json.hpp>

#include "supervisor/analysis/straggler.h"

namespace xpu_timer::supervisor {

nlohmann::json straggler_json(const Straggler& s);
nlohmann::json slow_report_json(const SlowReport& report);

}  // namespace xpu_timer::supervisor
