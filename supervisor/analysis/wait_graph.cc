#include "supervisor/analysis/wait_graph.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/op_names.h"
#include "supervisor/analysis/hang_detector.h"

namespace xpu_timer::supervisor {
namespace {

// Whether verdict `w` (sample `s`) is in collective (comm, seq): stuck in it,
// or running it without having waited for the timeout yet.
bool in_collective(const RankVerdict& w, const RankSample& s, uint64_t comm, uint64_t seq) {
  const proto::OpRef& op = w.has_op ? w.op : s.oldest_inflight;
  return (w.state == RankState::kStuck || op.started_ns != 0) && is_collective_op(op) &&
         op.comm_hash == comm && op.seq == seq;
}

}  // namespace

bool is_collective_op(const proto::OpRef& op) {
  return op.kind == static_cast<uint8_t>(proto::OpKind::kNccl);
}

const proto::CommSlot* comm_slot_of(const RankSample& s, uint64_t comm_hash) {
  for (const proto::CommSlot& c : s.comms) {
    if (c.flags & proto::kCommFlagUnknownIdentity) continue;
    if (c.comm_hash == comm_hash) return &c;
  }
  return nullptr;
}

const char* root_kind_name(RootKind k) {
  switch (k) {
    case RootKind::kRank:
      return "rank";
    case RootKind::kCollective:
      return "collective";
    case RootKind::kCycle:
      return "cycle";
  }
  return "rank";
}

void build_wait_graph(const Snapshot& snap, HangReport* report) {
  std::vector<RankVerdict>& ranks = report->ranks;
  const size_t n = std::min(ranks.size(), snap.ranks.size());
  std::map<int, size_t> pos;
  for (size_t i = 0; i < n; ++i) pos[ranks[i].rank] = i;
  // How long each stuck collective has been waited in: its first waiter's
  // wait. A silent member is judged against it, the same for every waiter,
  // so that its waiters never split into ranks that wait for a silent
  // member and ranks whose wait began after its news (their own launch
  // times differ by how late each got there).
  std::map<std::pair<uint64_t, uint64_t>, double> first_wait_s;
  for (size_t i = 0; i < n; ++i) {
    const RankVerdict& v = ranks[i];
    if (v.state != RankState::kStuck || !v.has_op || !is_collective_op(v.op)) continue;
    double& w = first_wait_s[{v.op.comm_hash, v.op.seq}];
    w = std::max(w, v.pending_s);
  }
  // Each communicator's members as the pages show them (the slot
  // comm_slot_of finds), in rank order, and the ranks never registered:
  // the only ranks a collective's waiter can wait for. Built once: a
  // waiter's edges are its collective's, the same for all of its waiters
  // (at 1,024 ranks, looking through every rank for every waiter took a
  // supervisor most of a 10 ms verdict, twice a second in a hang).
  std::map<uint64_t, std::vector<std::pair<size_t, const proto::CommSlot*>>> comm_members;
  std::vector<size_t> unregistered;
  for (size_t j = 0; j < n; ++j) {
    const RankSample& s = snap.ranks[j];
    if (!s.registered) unregistered.push_back(j);
    for (const proto::CommSlot& c : s.comms) {
      if (c.flags & proto::kCommFlagUnknownIdentity) continue;
      auto& list = comm_members[c.comm_hash];
      if (list.empty() || list.back().first != j) list.emplace_back(j, &c);
    }
  }
  // The edges of a collective's waiters, by (communicator, sequence number,
  // the communicator's size and name as the waiter's own slot says).
  using CollectiveKey = std::tuple<uint64_t, uint64_t, int64_t, std::string>;
  std::map<CollectiveKey, std::pair<std::vector<WaitEdge>, std::vector<WaitEdge>>> edges_of;
  const auto collective_edges = [&](uint64_t comm, uint64_t seq, const proto::CommSlot* own,
                                    const std::string& name) {
    // The ranks that can be waited for, in rank order: the members with the
    // slot comm_slot_of finds, and the ranks never registered (a member's
    // slot kept where one is both).
    std::map<size_t, const proto::CommSlot*> candidates;
    const auto found = comm_members.find(comm);
    if (found != comm_members.end()) candidates.insert(found->second.begin(), found->second.end());
    // Members the pages do not show (never registered ranks may be some).
    const int known = static_cast<int>(candidates.size());
    for (size_t j : unregistered) candidates.emplace(j, nullptr);
    const bool unknown_members = own != nullptr && static_cast<int>(own->nranks) > known;
    // Members not heard from (their node silent) whose node's last news,
    // newer than the collective's first wait, left them behind it (not yet
    // issued): waited for only when no member heard from explains the wait.
    // A silent member that had issued it was in it when last heard of and is
    // no suspect: naming every silent member made every rank of a silent
    // node a root, and the report grew with stuck ranks x silent ranks
    // (262,144 edges at 1,024 ranks with half the nodes silent).
    std::vector<WaitEdge> edges, silent;
    const double waited_s = first_wait_s[{comm, seq}];
    for (const auto& [j, slot] : candidates) {
      const RankVerdict& w = ranks[j];
      const RankSample& s = snap.ranks[j];
      bool waits = false;
      if (w.state == RankState::kSilent) {
        // Behind by news taken after the collective's first rank launched
        // it: older news cannot tell (a node whose supervisor died while
        // its ranks ran on, or an observer cut off from the store, would
        // have every silent rank named). The news's own age, not when its
        // node was last heard of: a lease seen since says nothing of where
        // its ranks are.
        const double news_age_s = std::max(s.news_age_s, w.silent_s);
        if (slot != nullptr && slot->issued_seq < seq && news_age_s < waited_s) {
          silent.push_back(WaitEdge{w.rank, comm, name, seq});
        }
        continue;
      }
      if (!s.registered) {
        waits = unknown_members;
      } else if (slot != nullptr) {
        if (in_collective(w, s, comm, seq)) continue;  // arrived
        waits = w.state == RankState::kExited || w.state == RankState::kUnresponsive ||
                slot->issued_seq < seq || slot->completed_seq < seq;
      }
      if (waits) edges.push_back(WaitEdge{w.rank, comm, name, seq});
    }
    return std::make_pair(std::move(edges), std::move(silent));
  };
  // Edges of every stuck rank in a collective.
  for (size_t i = 0; i < n; ++i) {
    RankVerdict& v = ranks[i];
    v.waits_for.clear();
    if (v.state != RankState::kStuck || !v.has_op || !is_collective_op(v.op)) continue;
    const uint64_t comm = v.op.comm_hash, seq = v.op.seq;
    const proto::CommSlot* own = comm_slot_of(snap.ranks[i], comm);
    std::string name = own != nullptr ? comm_slot_name(*own) : std::string();
    const CollectiveKey key{comm, seq, own != nullptr ? static_cast<int64_t>(own->nranks) : -1,
                            name};
    auto it = edges_of.find(key);
    if (it == edges_of.end())
      it = edges_of.emplace(key, collective_edges(comm, seq, own, name)).first;
    // Its own rank aside (a waiter never waits for itself); the silent
    // suspects only when no member heard from explains the wait.
    for (const WaitEdge& e : it->second.first) {
      if (e.rank != v.rank) v.waits_for.push_back(e);
    }
    if (v.waits_for.empty()) v.waits_for = it->second.second;
  }
  // Roots: ranks waited for that wait for nobody, stuck ranks with nobody to
  // wait for (their collective, or an operation that is no collective).
  report->roots.clear();
  std::set<size_t> targets;
  for (size_t i = 0; i < n; ++i) {
    for (const WaitEdge& e : ranks[i].waits_for) targets.insert(pos[e.rank]);
  }
  std::vector<bool> is_root(n, false);
  std::map<std::pair<uint64_t, uint64_t>, size_t> collective_root;
  for (size_t i = 0; i < n; ++i) {
    const RankVerdict& v = ranks[i];
    const bool stuck = v.state == RankState::kStuck;
    if (!v.waits_for.empty()) continue;
    if (!stuck && targets.count(i) == 0) continue;
    is_root[i] = true;
    if (stuck && v.has_op && is_collective_op(v.op)) {
      const auto key = std::make_pair(v.op.comm_hash, v.op.seq);
      const auto it = collective_root.find(key);
      if (it != collective_root.end()) {
        report->roots[it->second].ranks.push_back(v.rank);
        continue;
      }
      collective_root[key] = report->roots.size();
      report->roots.push_back(HangRoot{RootKind::kCollective, {v.rank}, {}});
    } else {
      report->roots.push_back(HangRoot{RootKind::kRank, {v.rank}, {}});
    }
  }
  // Which stuck ranks reach a root; those that do not wait in cycles.
  std::vector<std::vector<size_t>> back(n);  // who waits on whom, reversed
  for (size_t i = 0; i < n; ++i) {
    for (const WaitEdge& e : ranks[i].waits_for) back[pos[e.rank]].push_back(i);
  }
  std::vector<bool> reaches(n, false);
  std::vector<size_t> queue;
  for (size_t i = 0; i < n; ++i) {
    if (is_root[i]) {
      reaches[i] = true;
      queue.push_back(i);
    }
  }
  for (size_t q = 0; q < queue.size(); ++q) {
    for (size_t w : back[queue[q]]) {
      if (!reaches[w]) {
        reaches[w] = true;
        queue.push_back(w);
      }
    }
  }
  // Strongly connected components among the rest (Tarjan); a component that
  // waits on no other is a cycle root.
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<bool> on_stack(n, false);
  std::vector<size_t> stack;
  int counter = 0, comps = 0;
  std::function<void(size_t)> connect = [&](size_t v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on_stack[v] = true;
    for (const WaitEdge& e : ranks[v].waits_for) {
      const size_t w = pos[e.rank];
      if (reaches[w]) continue;
      if (index[w] < 0) {
        connect(w);
        low[v] = std::min(low[v], low[w]);
      } else if (on_stack[w]) {
        low[v] = std::min(low[v], index[w]);
      }
    }
    if (low[v] == index[v]) {
      for (;;) {
        const size_t w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        comp[w] = comps;
        if (w == v) break;
      }
      ++comps;
    }
  };
  for (size_t i = 0; i < n; ++i) {
    if (!reaches[i] && ranks[i].state == RankState::kStuck && index[i] < 0) connect(i);
  }
  std::vector<std::vector<int>> members(static_cast<size_t>(comps));
  std::vector<bool> sink(static_cast<size_t>(comps), true);
  for (size_t i = 0; i < n; ++i) {
    if (comp[i] < 0) continue;
    members[static_cast<size_t>(comp[i])].push_back(ranks[i].rank);
    for (const WaitEdge& e : ranks[i].waits_for) {
      const int c = comp[pos[e.rank]];
      if (c != comp[i]) sink[static_cast<size_t>(comp[i])] = false;
    }
  }
  for (size_t c = 0; c < members.size(); ++c) {
    if (!sink[c] || members[c].size() < 2) continue;
    std::sort(members[c].begin(), members[c].end());
    report->roots.push_back(HangRoot{RootKind::kCycle, members[c], {}});
  }
  // The waiters of each root, level by level; each rank once.
  std::vector<bool> seen(n, false);
  for (HangRoot& root : report->roots) {
    for (int r : root.ranks) seen[pos[r]] = true;
  }
  for (HangRoot& root : report->roots) {
    std::vector<size_t> level;
    for (int r : root.ranks) level.push_back(pos[r]);
    for (;;) {
      std::vector<size_t> next;
      for (size_t v : level) {
        for (size_t w : back[v]) {
          if (seen[w]) continue;
          seen[w] = true;
          next.push_back(w);
        }
      }
      if (next.empty()) break;
      std::vector<int> ranks_here;
      for (size_t w : next) ranks_here.push_back(ranks[w].rank);
      std::sort(ranks_here.begin(), ranks_here.end());
      root.waiters.push_back(std::move(ranks_here));
      level = std::move(next);
    }
  }
}

bool is_root_rank(const HangReport& report, int rank) {
  for (const HangRoot& r : report.roots) {
    if (std::find(r.ranks.begin(), r.ranks.end(), rank) != r.ranks.end()) return true;
  }
  return false;
}

bool wait_graph_is_deep(const HangReport& report) {
  std::set<uint64_t> comms;
  for (const RankVerdict& v : report.ranks) {
    for (const WaitEdge& e : v.waits_for) comms.insert(e.comm_hash);
  }
  if (comms.size() > 1) return true;
  for (const HangRoot& r : report.roots) {
    if (r.kind == RootKind::kCycle || r.waiters.size() > 1) return true;
  }
  return false;
}

}  // namespace xpu_timer::supervisor
