#include "supervisor/analysis/hang_detector.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <tuple>

#include "common/op_names.h"
#include "common/rank_set.h"
#include "common/status_page.h"

namespace xpu_timer::supervisor {
namespace {

constexpr double kMinUnresponsiveS = 10.0;

double ns_to_s(uint64_t ns) { return static_cast<double>(ns) / 1e9; }
uint64_t age_ns(uint64_t now, uint64_t then) { return now > then ? now - then : 0; }

// The communicator's name on any rank's page ("" when none gives one).
std::string comm_name_in(const Snapshot& snap, uint64_t comm_hash) {
  for (const RankSample& s : snap.ranks) {
    const proto::CommSlot* c = comm_slot_of(s, comm_hash);
    if (c != nullptr && c->name[0] != '\0') return comm_slot_name(*c);
  }
  return "";
}

// A stall names every rank, so always folded.
std::string folded_phrase(const std::vector<int>& ranks) { return folded_ranks_phrase(ranks); }

// The place of `rank` in `report` (RankVerdict::where); nullptr: unknown.
const std::vector<CodeFrame>* where_of(const HangReport& report, int rank) {
  const RankVerdict* v = find_verdict(report, rank);
  return v == nullptr || v->where.empty() ? nullptr : &v->where;
}

// A verdict names at most this many places after one of its phrases; a stall
// of 1,000 ranks in 1,000 places still makes one line.
constexpr size_t kMaxPlaces = 3;

// What follows a phrase naming `ranks`: ", in f (a.py:1) <- g (a.py:2)" when
// every one of them was found at that place; else each place with its ranks
// (", rank 2 in ..., ranks 3,5 in ...", at most kMaxPlaces, then how many
// ranks are elsewhere); "" while no place is known (the verdict is published
// before its stacks are in). `phrase` names a set of ranks.
std::string where_clause(const HangReport& report, const std::vector<int>& ranks,
                         std::string (*phrase)(const std::vector<int>&)) {
  std::map<std::string, std::vector<int>> by_place;
  size_t known = 0;
  for (int rank : ranks) {
    const std::vector<CodeFrame>* where = where_of(report, rank);
    if (where == nullptr) continue;
    by_place[where_phrase(*where)].push_back(rank);
    ++known;
  }
  if (known == 0) return "";
  if (by_place.size() == 1 && known == ranks.size()) return ", in " + by_place.begin()->first;
  // The most common places first, then by their first rank.
  std::vector<std::pair<std::string, std::vector<int>>> places(by_place.begin(), by_place.end());
  std::stable_sort(places.begin(), places.end(), [](const auto& a, const auto& b) {
    return a.second.size() != b.second.size() ? a.second.size() > b.second.size()
                                              : a.second.front() < b.second.front();
  });
  std::string out;
  size_t named = 0;
  for (size_t i = 0; i < places.size() && i < kMaxPlaces; ++i) {
    out += ", " + phrase(places[i].second) + " in " + places[i].first;
    named += places[i].second.size();
  }
  if (named < known) out += ", " + std::to_string(known - named) + " more elsewhere";
  return out;
}

// A place is kept only for a culprit (and one that exited since: where it
// was is evidence for the post-mortem; the sentence does not name it): a
// stuck rank is where its group says, and a healthy one was found somewhere
// by the stacks of an earlier verdict.
void keep_culprit_places(HangReport* r) {
  for (RankVerdict& v : r->ranks) {
    const bool culprit = v.state == RankState::kMissing || v.state == RankState::kUnresponsive ||
                         v.state == RankState::kStalled || v.state == RankState::kExited ||
                         is_root_rank(*r, v.rank);
    if (!culprit) v.where.clear();
  }
}

std::string unfolded_phrase(const std::vector<int>& ranks) { return ranks_phrase(ranks); }

// "; node 3 not heard from ..." for each silent node not in `said`.
std::string silent_clauses(const HangReport& report, bool with_durations,
                           const std::set<int>& said = {}) {
  std::string out;
  for (int node : silent_nodes(report)) {
    if (said.count(node) == 0) out += "; " + silent_node_phrase(report, node, with_durations);
  }
  return out;
}

std::string stall_sentence(const HangReport& report, bool with_durations) {
  std::vector<int> all, unresponsive;
  double beat_age_s = 0;
  for (const RankVerdict& v : report.ranks) {
    if (v.state == RankState::kSilent) continue;
    all.push_back(v.rank);
    if (v.state != RankState::kUnresponsive) continue;
    unresponsive.push_back(v.rank);
    beat_age_s = std::max(beat_age_s, v.heartbeat_age_s);
  }
  char buf[64];
  std::string s =
      folded_phrase(all) + " stalled: nothing in flight and nothing issued or completed";
  if (with_durations) {
    std::snprintf(buf, sizeof(buf), " for %.1f s", report.stalled_s);
    s += buf;
  }
  s += where_clause(report, all, folded_phrase);
  if (!unresponsive.empty()) {
    s += "; " + folded_phrase(unresponsive) + " unresponsive";
    if (with_durations) {
      std::snprintf(buf, sizeof(buf), " (no heartbeat for %.1f s)", beat_age_s);
      s += buf;
    }
  }
  return s + silent_clauses(report, with_durations);
}

}  // namespace

std::vector<int> silent_nodes(const HangReport& report) {
  std::set<int> nodes;
  for (const RankVerdict& v : report.ranks) {
    if (v.state == RankState::kSilent) nodes.insert(v.node);
  }
  return {nodes.begin(), nodes.end()};
}

std::string silent_node_phrase(const HangReport& report, int node, bool with_durations) {
  std::vector<int> ranks;
  double silent_s = 0;
  for (const RankVerdict& v : report.ranks) {
    if (v.state != RankState::kSilent || v.node != node) continue;
    ranks.push_back(v.rank);
    silent_s = std::max(silent_s, v.silent_s);
  }
  if (ranks.empty()) return "";
  std::string out =
      (node >= 0 ? "node " + std::to_string(node) : std::string("a node")) + " not heard from";
  if (with_durations) {
    char buf[48];
    std::snprintf(buf, sizeof(buf), " for %.1f s", silent_s);
    out += buf;
  }
  return out + " (" + folded_ranks_phrase(ranks) + ")";
}

const RankVerdict* find_verdict(const HangReport& report, int rank) {
  const auto it = std::lower_bound(report.ranks.begin(), report.ranks.end(), rank,
                                   [](const RankVerdict& v, int r) { return v.rank < r; });
  return it == report.ranks.end() || it->rank != rank ? nullptr : &*it;
}

const char* rank_state_name(RankState s) {
  switch (s) {
    case RankState::kOk:
      return "ok";
    case RankState::kStuck:
      return "stuck";
    case RankState::kMissing:
      return "missing";
    case RankState::kUnresponsive:
      return "unresponsive";
    case RankState::kExited:
      return "exited";
    case RankState::kStalled:
      return "stalled";
    case RankState::kSilent:
      return "silent";
  }
  return "ok";
}

const char* missing_reason_name(MissingReason r) {
  switch (r) {
    case MissingReason::kNone:
      return "";
    case MissingReason::kBehind:
      return "behind";
    case MissingReason::kNotStarted:
      return "not_started";
    case MissingReason::kIdle:
      return "no_operation_in_flight";
    case MissingReason::kNeverRegistered:
      return "never_registered";
  }
  return "";
}

HangReport classify_snapshot(const Snapshot& snap, double timeout_s) {
  HangReport r;
  r.timeout_s = timeout_s;
  const auto timeout_ns = static_cast<uint64_t>(timeout_s * 1e9);
  const auto not_started_ns = static_cast<uint64_t>(kNotStartedFactor * timeout_s * 1e9);
  const auto unresponsive_ns = static_cast<uint64_t>(std::max(kMinUnresponsiveS, timeout_s) * 1e9);

  // Pass 1: what each rank is on its own.
  r.ranks.reserve(snap.ranks.size());
  for (const RankSample& s : snap.ranks) {
    RankVerdict v;
    v.rank = s.rank;
    v.registered = s.registered;
    v.pid = s.pid;
    v.local_rank = s.local_rank;
    v.node = s.node;
    v.host = s.host;
    v.where = s.where;
    v.issued_at = s.issued_at;
    const uint64_t beat_age_ns =
        proto::heartbeat_age_ns(snap.now_ns, s.heartbeat_ns, s.registered_ns);
    v.heartbeat_age_s = s.registered ? ns_to_s(beat_age_ns) : 0;
    if (s.silent_s > 0) {
      // Its node's last news, however old: not judged on it.
      v.state = RankState::kSilent;
      v.silent_s = s.silent_s;
    } else if (!s.registered) {
      v.state = RankState::kMissing;
      v.reason = MissingReason::kNeverRegistered;
    } else if (!s.alive) {
      v.state = RankState::kExited;
    } else if (beat_age_ns > unresponsive_ns) {
      v.state = RankState::kUnresponsive;
    } else if (s.page_ok && s.inflight_count > 0) {
      // The hang clock (docs/architecture.md "Hang detection"): the page's
      // oldest_inflight is the operation that started first on the GPU; it
      // runs from its start, not its launch, so that its wait behind earlier
      // work on its stream (kernels we do not time, other streams it waits
      // for) does not count. With nothing started, only the fallback applies.
      const proto::OpRef& op = s.oldest_inflight;
      if (op.started_ns != 0 ? age_ns(snap.now_ns, op.started_ns) > timeout_ns
                             : age_ns(snap.now_ns, op.launch_ns) > not_started_ns) {
        v.state = RankState::kStuck;
        v.not_started = op.started_ns == 0;
      }
    }
    if (s.registered && s.page_ok && s.inflight_count > 0) {
      v.has_op = true;  // a verdict when stuck, else shown in reports
      v.op = s.oldest_inflight;
      v.pending_s = ns_to_s(age_ns(snap.now_ns, v.op.launch_ns));
      if (v.op.started_ns != 0) v.running_s = ns_to_s(age_ns(snap.now_ns, v.op.started_ns));
    }
    r.ranks.push_back(v);
  }

  // Pass 2: group the stuck ranks by the operation they wait in.
  // comm, seq, name, kind, not started
  using Key = std::tuple<uint64_t, uint64_t, uint16_t, uint8_t, bool>;
  std::map<Key, size_t> index;
  for (const RankVerdict& v : r.ranks) {
    if (v.state != RankState::kStuck) continue;
    const bool nccl = is_collective_op(v.op);
    const Key key{nccl ? v.op.comm_hash : 0, nccl ? v.op.seq : 0, v.op.name, v.op.kind,
                  v.not_started};
    auto [it, inserted] = index.emplace(key, r.groups.size());
    if (inserted) {
      StuckGroup g;
      g.kind = v.op.kind;
      g.name = v.op.name;
      g.comm_hash = std::get<0>(key);
      if (nccl) g.comm_name = comm_name_in(snap, g.comm_hash);
      g.seq = std::get<1>(key);
      g.not_started = v.not_started;
      r.groups.push_back(g);
    }
    StuckGroup& g = r.groups[it->second];
    g.ranks.push_back(v.rank);
    g.pending_s = std::max(g.pending_s, v.pending_s);
    g.waiting_s = std::max(g.waiting_s, v.not_started ? v.pending_s : v.running_s);
  }
  std::sort(r.groups.begin(), r.groups.end(), [](const StuckGroup& a, const StuckGroup& b) {
    return a.ranks.front() < b.ranks.front();
  });
  r.hung = !r.groups.empty();
  if (!r.hung) return r;

  // Pass 3: who the stuck ranks wait for. A rank that runs a collective its
  // peers are stuck in is stuck with them, whatever else it is behind on. A
  // rank behind on several of the groups' communicators is told first by the
  // one of its own last completed collective: what it did last, the same
  // whichever of its waiters passed the timeout first (the groups' order, by
  // lowest rank, follows that).
  std::vector<StuckGroup*> order;
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    RankVerdict& v = r.ranks[i];
    if (v.state != RankState::kOk) continue;
    const RankSample& s = snap.ranks[i];
    order.clear();
    for (StuckGroup& g : r.groups) {
      if (g.kind == static_cast<uint8_t>(proto::OpKind::kNccl) &&
          comm_slot_of(s, g.comm_hash) != nullptr) {
        order.push_back(&g);
      }
    }
    if (s.page_ok && s.completed_total > 0 && is_collective_op(s.last_completed)) {
      std::stable_partition(order.begin(), order.end(), [&](const StuckGroup* g) {
        return g->comm_hash == s.last_completed.comm_hash;
      });
    }
    const auto note_comm = [&](const StuckGroup& g) {
      const proto::CommSlot* slot = comm_slot_of(s, g.comm_hash);
      v.has_comm = true;
      v.comm_hash = g.comm_hash;
      v.comm_name = g.comm_name;
      v.waited_seq = g.seq;
      v.issued_seq = slot->issued_seq;
      v.last_completed_seq = slot->completed_seq;
    };
    // Issued and not completed, yet not stuck: either it runs the collective
    // and has not waited for the timeout (then it is in it, like the stuck
    // ranks: it arrived later, or its first look fell between two samples;
    // left "ok" it would read as healthy in the report), or its GPU never got
    // to it: the work before it on its stream has not finished (a stopped
    // GPU, queued work that does not drain), which keeps the stuck ranks
    // waiting.
    const auto running = std::find_if(order.begin(), order.end(), [&](const StuckGroup* g) {
      return s.oldest_inflight.started_ns != 0 && is_collective_op(s.oldest_inflight) &&
             s.oldest_inflight.comm_hash == g->comm_hash && s.oldest_inflight.seq == g->seq;
    });
    if (running != order.end()) {
      StuckGroup& g = **running;
      note_comm(g);
      v.state = RankState::kStuck;
      g.ranks.insert(std::upper_bound(g.ranks.begin(), g.ranks.end(), v.rank), v.rank);
      continue;
    }
    for (StuckGroup* gp : order) {
      StuckGroup& g = *gp;
      const proto::CommSlot* slot = comm_slot_of(s, g.comm_hash);
      const bool not_started = slot->issued_seq >= g.seq && slot->completed_seq < g.seq;
      if (slot->issued_seq < g.seq || not_started) {
        note_comm(g);
        v.state = RankState::kMissing;
        v.reason = not_started ? MissingReason::kNotStarted : MissingReason::kBehind;
        g.missing.push_back(v.rank);
        break;
      }
      if (!v.has_comm) note_comm(g);
    }
    if (v.state == RankState::kOk && s.page_ok && s.inflight_count == 0) {
      if (s.page_flags & proto::kPageFlagTimingDisabled) {
        v.state = RankState::kUnresponsive;  // "idle" means nothing without timing
        v.timing_disabled = true;
      } else {
        v.state = RankState::kMissing;
        v.reason = MissingReason::kIdle;
      }
    }
  }
  build_wait_graph(snap, &r);
  keep_culprit_places(&r);
  r.summary = hang_sentence(r);
  return r;
}

std::string hang_sentence(const HangReport& report, bool with_durations) {
  if (!report.hung) return report.stalled ? stall_sentence(report, with_durations) : "no hang";
  if (wait_graph_is_deep(report)) {
    std::set<int> said;  // silent nodes the roots name
    for (const HangRoot& root : report.roots) {
      const RankVerdict* v = find_verdict(report, root.ranks.front());
      if (v != nullptr && v->state == RankState::kSilent) said.insert(v->node);
    }
    return roots_sentence(report, with_durations) + silent_clauses(report, with_durations, said);
  }
  std::vector<std::string> parts;
  char buf[64];
  for (const StuckGroup& g : report.groups) {
    std::string p = ranks_phrase(g.ranks) + (g.not_started ? " stuck before " : " stuck in ") +
                    proto::op_name_str(static_cast<proto::OpName>(g.name));
    if (g.kind == static_cast<uint8_t>(proto::OpKind::kNccl)) {
      p += " #" + std::to_string(g.seq) + " on " + comm_phrase(g.comm_hash, g.comm_name);
    }
    if (g.not_started && !with_durations) {
      p += " (nothing started on the GPU)";
    } else if (g.not_started) {
      std::snprintf(buf, sizeof(buf), " (nothing started on the GPU for %.1f s)", g.waiting_s);
      p += buf;
    } else if (with_durations) {
      std::snprintf(buf, sizeof(buf), " for %.1f s", g.waiting_s);
      p += buf;
    }
    parts.push_back(std::move(p));
    // Behind ranks of this group, grouped by how far they got, then the
    // ranks that issued it and never started it.
    std::map<uint64_t, std::vector<int>> by_last;
    std::vector<int> not_started;
    for (int rank : g.missing) {
      for (const RankVerdict& v : report.ranks) {
        if (v.rank != rank) continue;
        if (v.reason == MissingReason::kNotStarted) {
          not_started.push_back(rank);
        } else {
          by_last[v.last_completed_seq].push_back(rank);
        }
      }
    }
    for (const auto& [last, ranks] : by_last) {
      parts.push_back(ranks_phrase(ranks) + " missing (last completed #" + std::to_string(last) +
                      " on that comm)" + where_clause(report, ranks, unfolded_phrase));
    }
    if (!not_started.empty()) {
      parts.push_back(ranks_phrase(not_started) + " missing (issued #" + std::to_string(g.seq) +
                      ", not started on the GPU)" +
                      where_clause(report, not_started, unfolded_phrase));
    }
  }
  std::vector<int> idle, never, exited;
  std::vector<const RankVerdict*> unresponsive;
  for (const RankVerdict& v : report.ranks) {
    if (v.state == RankState::kMissing && v.reason == MissingReason::kIdle) idle.push_back(v.rank);
    if (v.state == RankState::kMissing && v.reason == MissingReason::kNeverRegistered) {
      never.push_back(v.rank);
    }
    if (v.state == RankState::kExited) exited.push_back(v.rank);
    if (v.state == RankState::kUnresponsive) unresponsive.push_back(&v);
  }
  if (!idle.empty()) {
    parts.push_back(ranks_phrase(idle) + " missing (no operation in flight)" +
                    where_clause(report, idle, unfolded_phrase));
  }
  if (!never.empty()) parts.push_back(ranks_phrase(never) + " missing (never registered)");
  for (const RankVerdict* v : unresponsive) {
    std::string p = "rank " + std::to_string(v->rank) + " unresponsive";
    if (v->timing_disabled) {
      p += " (timing disabled after a CUDA error: where it is is unknown)";
    } else if (with_durations) {
      std::snprintf(buf, sizeof(buf), " (no heartbeat for %.1f s)", v->heartbeat_age_s);
      p += buf;
    }
    parts.push_back(p + where_clause(report, {v->rank}, unfolded_phrase));
  }
  if (!exited.empty()) parts.push_back(ranks_phrase(exited) + " exited");

  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += "; ";
    out += p;
  }
  return out + silent_clauses(report, with_durations);
}

void HangDetector::set_thresholds(double timeout_s, double stall_factor) {
  timeout_s_ = timeout_s;
  stall_s_ = stall_factor * timeout_s;
  if (!report_.hung) report_.timeout_s = timeout_s;
}

namespace {

// Whether a silent rank whose node's news is on its way is a member of
// communicator `comm`.
bool pending_member_of(const Snapshot& snap, uint64_t comm) {
  for (const RankSample& s : snap.ranks) {
    if (s.silent_s <= 0 || !s.news_pending) continue;
    for (const proto::CommSlot& c : s.comms) {
      if (c.comm_hash == comm) return true;
    }
  }
  return false;
}

// Whether a root of `report` (classified from `snap`) is a silent rank whose
// node's news is on its way, or a collective one of whose members is: its
// node's last news, older than the wait, could not say whether that member
// is in it (wait_graph.cc), and the news on its way will (a busy node's
// supervisor publishes late; declared now, the waiters themselves would be
// named the root, and the verdict would change a round later).
bool rests_on_pending_news(const HangReport& report, const Snapshot& snap) {
  // A rank of another node named behind a collective on news older than
  // the collective's wait: that news could not show it in it, and newer
  // news is on its way.
  double waited_s = 0;
  for (const RankVerdict& v : report.ranks) {
    if (v.state == RankState::kStuck) waited_s = std::max(waited_s, v.pending_s);
  }
  // One verdict per sample, in the sample's order (classify_snapshot).
  for (size_t i = 0; i < report.ranks.size() && i < snap.ranks.size(); ++i) {
    const RankSample& s = snap.ranks[i];
    if (report.ranks[i].state == RankState::kMissing && s.silent_s <= 0 && s.news_pending &&
        s.news_age_s >= waited_s) {
      return true;
    }
  }
  for (const HangRoot& root : report.roots) {
    if (root.kind == RootKind::kCollective && !root.ranks.empty()) {
      const RankVerdict* v = find_verdict(report, root.ranks.front());
      if (v != nullptr && v->has_op && pending_member_of(snap, v->op.comm_hash)) return true;
    }
    for (int rank : root.ranks) {
      for (const RankSample& s : snap.ranks) {
        if (s.rank == rank && s.silent_s > 0 && s.news_pending) return true;
      }
    }
  }
  return false;
}

}  // namespace

HangEvent HangDetector::update(const Snapshot& snap) {
  still_.note(snap);
  HangReport now =
      classify_snapshot(snap, report_.hung ? std::min(timeout_s_, report_.timeout_s) : timeout_s_);
  if (now.hung) {
    // A new hang waits for the news of a silent root's node that is on its
    // way (RankSample::news_pending): declared now it would name that
    // node's ranks, and change to the real culprit a round later.
    if (!report_.hung && rests_on_pending_news(now, snap)) return HangEvent::kNone;
    const std::string signature = hang_sentence(now, false);
    HangEvent event = HangEvent::kNone;
    if (!report_.hung) {
      event = HangEvent::kDetected;
      now.detected_at_unix_s = snap.now_unix_s;
      stuck_baseline_.clear();
    } else {
      now.detected_at_unix_s = report_.detected_at_unix_s;
      if (signature != signature_) event = HangEvent::kChanged;
    }
    for (size_t i = 0; i < now.ranks.size(); ++i) {
      if (now.ranks[i].state == RankState::kStuck) {
        stuck_baseline_.emplace(now.ranks[i].rank,
                                std::make_pair(snap.ranks[i].pid, snap.ranks[i].completed_total));
      }
    }
    signature_ = signature;
    report_ = std::move(now);
    return event;
  }
  if (!report_.hung) return judge_stall(snap, std::move(now));
  // Hung before, nobody stuck now: cleared only if a stuck rank made progress.
  bool progressed = false;
  for (const RankSample& s : snap.ranks) {
    auto it = stuck_baseline_.find(s.rank);
    if (it == stuck_baseline_.end() || !s.registered) continue;
    if (s.pid != it->second.first || s.completed_total > it->second.second) progressed = true;
  }
  if (!progressed) {
    // Keep the last hang report, but say that it no longer moves: its
    // durations would otherwise read as current for ever.
    if (!report_.frozen_since_unix_s) {
      report_.frozen_since_unix_s = snap.now_unix_s;
      report_.summary += "; no rank is stuck any more, durations as of then";
    }
    return HangEvent::kNone;
  }
  stuck_baseline_.clear();
  signature_.clear();
  report_ = std::move(now);
  return HangEvent::kCleared;
}

HangEvent HangDetector::judge_stall(const Snapshot& snap, HangReport now) {
  const bool was = report_.stalled;
  // A stall is declared only on news of every rank; once declared, a rank
  // whose page could not be read this time keeps it standing.
  const std::optional<double> still =
      stall_s_ > 0 ? still_.still_s(snap, /*need_news=*/!was) : std::nullopt;
  if (!still || *still < stall_s_) {
    keep_culprit_places(&now);
    report_ = std::move(now);
    if (!was) return HangEvent::kNone;
    signature_.clear();
    return HangEvent::kCleared;
  }
  now.stalled = true;
  now.stalled_since_unix_s = was ? report_.stalled_since_unix_s : snap.now_unix_s - *still;
  now.stalled_s = std::max(*still, snap.now_unix_s - *now.stalled_since_unix_s);
  for (RankVerdict& v : now.ranks) {
    if (v.state == RankState::kOk) v.state = RankState::kStalled;
  }
  keep_culprit_places(&now);
  now.summary = hang_sentence(now);
  const std::string signature = hang_sentence(now, false);
  const HangEvent event = !was ? HangEvent::kDetected
                               : (signature != signature_ ? HangEvent::kChanged : HangEvent::kNone);
  signature_ = signature;
  report_ = std::move(now);
  return event;
}

bool HangDetector::wants_fresh_news(int node) const {
  if (report_.hung || report_.stalled) return true;
  if (stall_s_ <= 0) return false;
  const std::optional<double> still = still_.node_still_s(node);
  return still && *still >= stall_s_ / 2;
}

}  // namespace xpu_timer::supervisor
