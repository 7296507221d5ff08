#include "supervisor/analysis/hang_report_json.h"

#include <utility>

#include "common/op_names.h"
#include "common/status_page_layout.h"

namespace xpu_timer::supervisor {
namespace {

namespace hd = hang_document;

hd::Operation operation_of(const proto::OpRef& op) {
  hd::Operation o;
  o.kind = proto::op_kind_str(op.kind);
  o.name = proto::op_name_str(static_cast<proto::OpName>(op.name));
  if (op.kind == static_cast<uint8_t>(proto::OpKind::kNccl)) {
    o.comm = op.comm_hash;
    o.seq = op.seq;
  }
  o.dtype = proto::dtype_str(static_cast<proto::DType>(op.dtype));
  o.bytes = op.bytes;
  o.flops = op.flops;
  o.group_size = op.group_size;
  return o;
}

hd::Rank rank_of(const RankVerdict& v) {
  hd::Rank r;
  r.rank = v.rank;
  r.state = rank_state_name(v.state);
  r.registered = v.registered;
  if (v.node >= 0) r.node = v.node;
  r.pid = v.pid;
  r.local_rank = v.local_rank;
  r.host = v.host;
  r.heartbeat_age_s = v.heartbeat_age_s;
  r.silent_s = v.silent_s;
  if (v.has_op) {
    r.operation = operation_of(v.op);
    r.pending_s = v.pending_s;
    if (v.running_s >= 0) r.running_s = v.running_s;
  }
  r.not_started = v.not_started;
  r.reason = missing_reason_name(v.reason);
  if (v.has_comm) {
    r.comm = v.comm_hash;
    r.comm_name = v.comm_name;
    r.seq = v.waited_seq;
    r.issued_seq = v.issued_seq;
    r.last_completed_seq = v.last_completed_seq;
  }
  r.where = v.where;
  r.issued_at = v.issued_at;
  for (const WaitEdge& e : v.waits_for) {
    hd::Rank::WaitFor w;
    w.rank = e.rank;
    w.comm = e.comm_hash;
    w.comm_name = e.comm_name;
    w.seq = e.seq;
    r.waits_for.push_back(std::move(w));
  }
  return r;
}

hd::Group group_of(const StuckGroup& g) {
  hd::Group o;
  o.operation = proto::op_name_str(static_cast<proto::OpName>(g.name));
  o.kind = proto::op_kind_str(g.kind);
  if (g.kind == static_cast<uint8_t>(proto::OpKind::kNccl)) {
    o.comm = g.comm_hash;
    o.comm_name = g.comm_name;
    o.seq = g.seq;
  }
  o.ranks = g.ranks;
  o.missing = g.missing;
  o.pending_s = g.pending_s;
  o.waiting_s = g.waiting_s;
  o.not_started = g.not_started;
  return o;
}

}  // namespace

hang_document::Document hang_document_of(const HangReport& report) {
  hd::Document d;
  d.hung = report.hung;
  d.detected_at = report.detected_at_unix_s;
  d.frozen_since = report.frozen_since_unix_s;
  d.timeout_s = report.timeout_s;
  d.stalled = report.stalled;
  d.stalled_since = report.stalled_since_unix_s;
  d.summary = report.summary;
  for (const RankVerdict& v : report.ranks) d.ranks.push_back(rank_of(v));
  for (const StuckGroup& g : report.groups) d.groups.push_back(group_of(g));
  for (const HangRoot& root : report.roots) {
    d.roots.push_back(hd::Root{root_kind_name(root.kind), root.ranks, root.waiters});
  }
  return d;
}

namespace {

hd::Document whole_document(const HangReport& report, const HangDocumentParts& parts) {
  hd::Document d = hang_document_of(report);
  d.mismatches = parts.mismatches.is_array() ? parts.mismatches : nlohmann::json::array();
  d.mismatch_total = parts.mismatch_total;
  d.collectives_checked = parts.collectives_checked;
  d.coordinator = parts.coordinator;
  d.stacks = parts.stacks;
  d.timeline = parts.timeline;
  return d;
}

}  // namespace

std::string hang_document_text(const HangReport& report, const HangDocumentParts& parts) {
  return hd::to_text(whole_document(report, parts));
}

nlohmann::json hang_document_json(const HangReport& report, const HangDocumentParts& parts) {
  return hd::to_json(whole_document(report, parts));
}

}  // namespace xpu_timer::supervisor
