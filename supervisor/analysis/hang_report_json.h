// The JSON of GET /hang and <dump-dir>/hang.json. Pure.
#pragma once

#include <nlohmann/json.hpp>

#include "supervisor/analysis/hang_detector.h"

namespace xpu_timer::supervisor {

// {"hung":true,"detected_at":1700000000.5,"timeout_s":300,"summary":"...",
//  "ranks":[{"rank":0,"state":"stuck","pid":..,"host":..,"operation":{..},
//            "pending_s":5.1,"running_s":5.0}, {"rank":2,"state":"missing",
//            "reason":"behind","comm":"..","seq":6,"issued_seq":5,
//            "last_completed_seq":5}, ...],
//  "groups":[{"operation":"AllReduce","kind":"nccl","comm":"..","seq":6,
//             "ranks":[0,1,3],"ranks_folded":"0-1/3","missing":[2],"pending_s":5.2}]}
nlohmann::json hang_report_json(const HangReport& report);

}  // namespace xpu_timer::supervisor
