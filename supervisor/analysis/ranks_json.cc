#include "supervisor/analysis/ranks_json.h"

#include <map>

#include "common/status_page.h"
#include "supervisor/analysis/op_json.h"

namespace xpu_timer::supervisor {
namespace {

double age_s(uint64_t now, uint64_t then) {
  return now > then ? static_cast<double>(now - then) / 1e9 : 0.0;
}

}  // namespace

nlohmann::json ranks_json(const Snapshot& snap, const HangReport& latest,
                          const std::map<int, nlohmann::json>* crashes) {
  using nlohmann::json;
  std::map<int, RankState> states;
  for (const RankVerdict& v : latest.ranks) states[v.rank] = v.state;
  json out = json::array();
  for (const RankSample& s : snap.ranks) {
    if (!s.registered) continue;
    json r;
    r["rank"] = s.rank;
    r["local_rank"] = s.local_rank;
    r["pid"] = s.pid;
    r["host"] = s.host;
    auto it = states.find(s.rank);
    RankState state = it != states.end() ? it->second : RankState::kOk;
    if (!s.alive) state = RankState::kExited;  // fresher than the last poll
    r["state"] = rank_state_name(state);
    if (!s.alive && crashes != nullptr) {  // how it ended: "crashed" or "terminated"
      auto c = crashes->find(s.rank);
      if (c != crashes->end() && c->second.value("pid", 0) == s.pid) {
        r["state"] = c->second.value("outcome", "crashed");
      }
    }
    r["connected"] = s.connected;
    r["alive"] = s.alive;
    r["page_ok"] = s.page_ok;
    r["issued_total"] = s.issued_total;
    r["completed_total"] = s.completed_total;
    r["inflight_count"] = s.inflight_count;
    if (s.page_ok && s.inflight_count > 0) {
      json op = op_json(s.oldest_inflight);
      op["pending_s"] = age_s(snap.now_ns, s.oldest_inflight.launch_ns);
      op["running_s"] = s.oldest_inflight.started_ns != 0
                            ? json(age_s(snap.now_ns, s.oldest_inflight.started_ns))
                            : json(nullptr);
      r["oldest_inflight"] = std::move(op);
    } else {
      r["oldest_inflight"] = nullptr;
    }
    r["last_completed"] =
        s.page_ok && s.completed_total > 0 ? op_json(s.last_completed) : json(nullptr);
    const uint64_t beat_age_ns =
        proto::heartbeat_age_ns(snap.now_ns, s.heartbeat_ns, s.registered_ns);
    r["heartbeat_age_s"] = static_cast<double>(beat_age_ns) / 1e9;
    json comms = json::array();
    for (const proto::CommSlot& c : s.comms) {
      comms.push_back({{"comm", comm_hex(c.comm_hash)},
                       {"name", c.name[0] != '\0' ? json(comm_slot_name(c)) : json(nullptr)},
                       {"nranks", c.nranks},
                       {"rank", c.rank},
                       {"issued_seq", c.issued_seq},
                       {"completed_seq", c.completed_seq},
                       {"unknown_identity", (c.flags & proto::kCommFlagUnknownIdentity) != 0}});
    }
    r["comms"] = std::move(comms);
    r["dropped_queue_full"] = s.dropped_queue_full;
    r["skipped_capture"] = s.skipped_capture;
    r["hook_errors"] = s.hook_errors;
    r["queue_depth"] = s.queue_depth;
    r["timing_disabled"] = (s.page_flags & proto::kPageFlagTimingDisabled) != 0;
    // null: the job marks no steps (no XPU_TIMER_STEP_RANGE, no optimizer hook).
    r["steps"] = s.page_ok && s.step_source != 0 ? json(s.steps) : json(nullptr);
    if (crashes != nullptr) {
      auto c = crashes->find(s.rank);
      r["crash"] = c != crashes->end() ? c->second : json(nullptr);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace xpu_timer::supervisor
