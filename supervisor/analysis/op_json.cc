#include "supervisor/analysis/op_json.h"

#include "common/comm_names.h"

namespace xpu_timer::supervisor {

nlohmann::json op_json(const proto::OpRef& op) {
  nlohmann::json j;
  j["kind"] = op_kind_str(op.kind);
  j["name"] = proto::op_name_str(static_cast<proto::OpName>(op.name));
  if (op.kind == static_cast<uint8_t>(proto::OpKind::kNccl)) {
    j["comm"] = comm_hex(op.comm_hash);
    j["seq"] = op.seq;
  }
  j["dtype"] = proto::dtype_str(static_cast<proto::DType>(op.dtype));
  j["bytes"] = op.bytes;
  j["flops"] = op.flops;
  j["group_size"] = op.group_size;
  return j;
}

}  // namespace xpu_timer::supervisor

namespace xpu_timer::supervisor {

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace xpu_timer::supervisor
