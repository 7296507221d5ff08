#include "supervisor/analysis/hang_report_json.h"

#include "common/rank_set.h"
#include "supervisor/analysis/op_json.h"

namespace xpu_timer::supervisor {

nlohmann::json hang_report_json(const HangReport& report) {
  using nlohmann::json;
  json j;
  j["hung"] = report.hung;
  j["detected_at"] = report.detected_at_unix_s ? json(*report.detected_at_unix_s) : json(nullptr);
  j["timeout_s"] = report.timeout_s;
  j["summary"] = report.summary;
  json ranks = json::array();
  for (const RankVerdict& v : report.ranks) {
    json r;
    r["rank"] = v.rank;
    r["state"] = rank_state_name(v.state);
    r["registered"] = v.registered;
    r["node"] = v.node >= 0 ? json(v.node) : json(nullptr);
    if (v.registered) {
      r["pid"] = v.pid;
      r["local_rank"] = v.local_rank;
      r["host"] = v.host;
      r["heartbeat_age_s"] = v.heartbeat_age_s;
    }
    if (v.has_op) {
      r["operation"] = op_json(v.op);
      r["pending_s"] = v.pending_s;
      r["running_s"] = v.running_s >= 0 ? json(v.running_s) : json(nullptr);
    }
    if (v.state == RankState::kStuck) r["not_started"] = v.not_started;
    if (v.state == RankState::kMissing) r["reason"] = missing_reason_name(v.reason);
    if (v.has_comm) {
      r["comm"] = comm_hex(v.comm_hash);
      r["comm_name"] = v.comm_name.empty() ? json(nullptr) : json(v.comm_name);
      r["seq"] = v.waited_seq;
      r["issued_seq"] = v.issued_seq;
      r["last_completed_seq"] = v.last_completed_seq;
    } else if (v.state == RankState::kMissing) {
      // Same keys for every missing rank; null when it is in no stuck communicator.
      r["comm"] = nullptr;
      r["comm_name"] = nullptr;
      r["seq"] = nullptr;
      r["issued_seq"] = nullptr;
      r["last_completed_seq"] = nullptr;
    }
    ranks.push_back(std::move(r));
  }
  j["ranks"] = std::move(ranks);
  json groups = json::array();
  for (const StuckGroup& g : report.groups) {
    json o;
    o["operation"] = proto::op_name_str(static_cast<proto::OpName>(g.name));
    o["kind"] = op_kind_str(g.kind);
    if (g.kind == static_cast<uint8_t>(proto::OpKind::kNccl)) {
      o["comm"] = comm_hex(g.comm_hash);
      o["comm_name"] = g.comm_name.empty() ? json(nullptr) : json(g.comm_name);
      o["seq"] = g.seq;
    }
    o["ranks"] = g.ranks;
    o["ranks_folded"] = fold_ranks(g.ranks);
    o["missing"] = g.missing;
    o["pending_s"] = g.pending_s;
    o["waiting_s"] = g.waiting_s;  // the hang clock: since it started on the GPU
    o["not_started"] = g.not_started;
    groups.push_back(std::move(o));
  }
  j["groups"] = std::move(groups);
  return j;
}

}  // namespace xpu_timer::supervisor
