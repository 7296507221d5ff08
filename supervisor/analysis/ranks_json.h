// The JSON of GET /ranks: one object per registered rank with its page's
// counters and communicators, and its state from the latest hang report.
// Pure.
#pragma once

#include <map>
#include <nlohmann/json.hpp>

#include "supervisor/analysis/hang_detector.h"
#include "supervisor/analysis/rank_sample.h"

namespace xpu_timer::supervisor {

// [{"rank":0,"local_rank":0,"pid":..,"host":"..","state":"ok","connected":true,
//   "alive":true,"page_ok":true,"issued_total":..,"completed_total":..,
//   "inflight_count":..,"oldest_inflight":{op..,"pending_s":..}|null,
//   "last_completed":{op..}|null,"heartbeat_age_s":..,
//   "comms":[{"comm":"<16 hex>","nranks":4,"rank":0,"issued_seq":6,"completed_seq":5}],
//   "dropped_queue_full":0,"skipped_capture":0,"hook_errors":0,"queue_depth":0,
//   "timing_disabled":false,"steps":40|null,"crash":{...}|null}]
// `crashes`: rank -> crash object (crash_json.h); null: no "crash" member.
nlohmann::json ranks_json(const Snapshot& snap, const HangReport& latest,
                          const std::map<int, nlohmann::json>* crashes = nullptr);

}  // namespace xpu_timer::supervisor
