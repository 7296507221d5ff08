// The verdict's sentence when it leads with the roots of the waits
// (wait_graph.h, hang_sentence in hang_detector.h).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/comm_names.h"
#include "common/op_names.h"
#include "supervisor/analysis/hang_detector.h"
#include "supervisor/analysis/wait_graph.h"

namespace xpu_timer::supervisor {
namespace {

// "tp", or "comm 1a2b3c4d5e6f7a8b" without a name.
std::string comm_label(uint64_t comm, const std::string& name) {
  return name.empty() ? "comm " + comm_hex(comm) : name;
}

// A root that is one rank: why nobody gets past it.
std::string root_rank_clause(const RankVerdict& v, bool with_durations) {
  char buf[96];
  std::string p = "rank " + std::to_string(v.rank);
  switch (v.state) {
    case RankState::kExited:
      return p + " exited";
    case RankState::kUnresponsive:
      if (with_durations) {
        std::snprintf(buf, sizeof(buf), " unresponsive (no heartbeat for %.1f s)",
                      v.heartbeat_age_s);
        p += buf;
      } else {
        p += " unresponsive";
      }
      break;
    case RankState::kStuck: {
      p += std::string(" stuck in ") + proto::op_name_str(static_cast<proto::OpName>(v.op.name));
      if (with_durations) {
        std::snprintf(buf, sizeof(buf), " for %.1f s", v.not_started ? v.pending_s : v.running_s);
        p += buf;
      }
      return p;
    }
    default:
      p += " missing";
      switch (v.reason) {
        case MissingReason::kNeverRegistered:
          return p + " (never registered)";
        case MissingReason::kIdle:
          p += " (no operation in flight)";
          break;
        case MissingReason::kNotStarted:
          p += " (issued #" + std::to_string(v.waited_seq) + " on " +
               comm_phrase(v.comm_hash, v.comm_name) + ", not started on the GPU)";
          break;
        default:
          if (v.has_comm) {
            p += " (last completed #" + std::to_string(v.last_completed_seq) + " on " +
                 comm_phrase(v.comm_hash, v.comm_name) + ")";
          }
          break;
      }
  }
  if (!v.where.empty()) p += ", in " + where_phrase(v.where);
  return p;
}

// "rank 2 in AllReduce #21 on tp, ranks 0,4 in AllReduce #21 on dp": the
// waiters of one level by the collective they are in (at most 4, then how
// many more ranks).
std::string waiters_phrase(const HangReport& report, const std::vector<int>& ranks) {
  std::map<std::string, std::vector<int>> by_place;
  for (int rank : ranks) {
    const RankVerdict* v = find_verdict(report, rank);
    std::string place = "in ?";
    if (v != nullptr && v->has_op) {
      place = std::string("in ") + proto::op_name_str(static_cast<proto::OpName>(v->op.name));
      if (is_collective_op(v->op)) {
        const std::string name = v->waits_for.empty() ? std::string() : v->waits_for[0].comm_name;
        place += " #" + std::to_string(v->op.seq) + " on " + comm_label(v->op.comm_hash, name);
      }
    }
    by_place[place].push_back(rank);
  }
  std::vector<std::pair<std::string, std::vector<int>>> places(by_place.begin(), by_place.end());
  std::stable_sort(places.begin(), places.end(), [](const auto& a, const auto& b) {
    return a.second.front() < b.second.front();
  });
  constexpr size_t kMaxPlacesPerLevel = 4;
  std::string out;
  size_t named = 0;
  for (size_t i = 0; i < places.size() && i < kMaxPlacesPerLevel; ++i) {
    if (!out.empty()) out += ", ";
    out += folded_ranks_phrase(places[i].second) + " " + places[i].first;
    named += places[i].second.size();
  }
  if (named < ranks.size()) out += ", and " + std::to_string(ranks.size() - named) + " more";
  return out;
}

// "deadlock by order: rank 0 waits for rank 1 in AllReduce #5 on tp, rank 1
// for rank 0 in AllReduce #7 on dp".
std::string cycle_clause(const HangReport& report, const HangRoot& root) {
  std::string out = "deadlock by order among " + folded_ranks_phrase(root.ranks) + ":";
  const std::set<int> in(root.ranks.begin(), root.ranks.end());
  size_t listed = 0;
  for (int rank : root.ranks) {
    const RankVerdict* v = find_verdict(report, rank);
    if (v == nullptr) continue;
    for (const WaitEdge& e : v->waits_for) {
      if (in.count(e.rank) == 0) continue;
      if (listed == 4) {
        out += ", ...";
        return out;
      }
      out += std::string(listed++ == 0 ? " " : ", ") + "rank " + std::to_string(rank) +
             " waits for rank " + std::to_string(e.rank) + " in " +
             proto::op_name_str(static_cast<proto::OpName>(v->op.name)) + " #" +
             std::to_string(e.seq) + " on " + comm_label(e.comm_hash, e.comm_name);
      break;
    }
  }
  return out;
}

}  // namespace

// The roots first, then who waits on them (docs/usage.md "Hang detection").
std::string roots_sentence(const HangReport& report, bool with_durations) {
  constexpr size_t kMaxRoots = 3, kMaxLevels = 3;
  std::string out;
  size_t shown = 0;
  std::vector<int> more;
  std::set<int> silent_said;  // a silent node is one root of the sentence
  for (const HangRoot& root : report.roots) {
    const RankVerdict* first = find_verdict(report, root.ranks.front());
    const bool silent = first != nullptr && first->state == RankState::kSilent;
    if (silent && !silent_said.insert(first->node).second) continue;
    if (shown == kMaxRoots) {
      more.insert(more.end(), root.ranks.begin(), root.ranks.end());
      continue;
    }
    ++shown;
    if (!out.empty()) out += "; ";
    if (silent) {
      out += silent_node_phrase(report, first->node, with_durations);
    } else if (root.kind == RootKind::kCycle) {
      out += cycle_clause(report, root);
    } else if (root.kind == RootKind::kCollective) {
      const RankVerdict* v = find_verdict(report, root.ranks.front());
      out += folded_ranks_phrase(root.ranks) + " stuck in " +
             (v != nullptr ? proto::op_name_str(static_cast<proto::OpName>(v->op.name)) : "?");
      if (v != nullptr) {
        out += " #" + std::to_string(v->op.seq) + " on " + comm_phrase(v->op.comm_hash, "");
      }
      out += " with every member in it";
    } else {
      const RankVerdict* v = find_verdict(report, root.ranks.front());
      if (v != nullptr) out += root_rank_clause(*v, with_durations);
    }
    for (size_t level = 0; level < root.waiters.size(); ++level) {
      if (level == kMaxLevels) {
        size_t rest = 0;
        for (size_t l = level; l < root.waiters.size(); ++l) rest += root.waiters[l].size();
        out += "; " + std::to_string(rest) + " more ranks behind them";
        break;
      }
      out += level == 0 ? "; waiting on it: " : "; behind them: ";
      out += waiters_phrase(report, root.waiters[level]);
    }
  }
  if (!more.empty()) {
    std::sort(more.begin(), more.end());
    out += "; and " + std::to_string(more.size()) + " more at the root (" +
           folded_ranks_phrase(more) + ")";
  }
  return out;
}

}  // namespace xpu_timer::supervisor
