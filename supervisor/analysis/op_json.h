// JSON of one operation of a status page, shared by /hang and /ranks. Pure.
#pragma once

#include <nlohmann/json.hpp>

#include "common/op_names.h"
#include "common/status_page_layout.h"

namespace xpu_timer::supervisor {

// {"kind":"nccl","name":"AllReduce","comm":"<16 hex>","seq":6,"dtype":"bf16",
//  "bytes":..,"flops":..,"group_size":1}; comm and seq only for NCCL.
nlohmann::json op_json(const proto::OpRef& op);

using proto::op_kind_str;  // common/op_names.h

}  // namespace xpu_timer::supervisor

namespace xpu_timer::supervisor {

// dump() that never throws on invalid UTF-8 (host names and paths come from
// the ranks): bad bytes become U+FFFD.
std::string json_text(const nlohmann::json& j, int indent = -1);

}  // namespace xpu_timer::supervisor
