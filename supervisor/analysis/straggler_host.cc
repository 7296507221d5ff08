// A late host's cost bound (straggler.h, the method): the time its peers'
// hosts blocked on their GPUs, which a host as busy as theirs never does.
#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "supervisor/analysis/median.h"
#include "supervisor/analysis/straggler.h"

namespace xpu_timer::supervisor {

void StragglerAnalyzer::add_host_blocked(int rank, uint64_t blocked_ns, uint64_t start_ns,
                                         uint64_t end_ns) {
  if (end_ns <= start_ns) return;
  // A wait counts when its call returns: one that outlasted the sample (the
  // Poller moves a sample's start on while nothing changes) began at least
  // that long before the sample's end.
  if (blocked_ns > end_ns - start_ns) start_ns = blocked_ns < end_ns ? end_ns - blocked_ns : 0;
  blocked_[rank].push_back(Blocked{start_ns, end_ns, std::min(blocked_ns, end_ns - start_ns)});
}

double StragglerAnalyzer::host_blocked_s(int rank, uint64_t from_ns, uint64_t now_ns) const {
  const auto it = blocked_.find(rank);
  if (it == blocked_.end() || it->second.empty() || now_ns <= from_ns) return -1;
  double sum_ns = 0;
  for (const Blocked& b : it->second) {
    const uint64_t lo = std::max(b.start_ns, from_ns), hi = std::min(b.end_ns, now_ns);
    if (hi <= lo) continue;
    sum_ns += static_cast<double>(b.blocked_ns) * static_cast<double>(hi - lo) /
              static_cast<double>(b.end_ns - b.start_ns);
  }
  // Threads that waited at once add up: never more than the time itself.
  return std::min(sum_ns, static_cast<double>(now_ns - from_ns)) / 1e9;
}

double StragglerAnalyzer::host_cost_bound(Straggler* s, uint64_t now_ns, double span_s) const {
  const auto w = window_.find(s->comm);
  if (w == window_.end() || span_s <= 0) return -1;
  std::set<int> peers;
  for (const Judged& j : w->second) {
    for (const Part& q : j.parts) {
      if (q.rank != s->rank) peers.insert(q.rank);
    }
  }
  const auto span_ns = static_cast<uint64_t>(span_s * 1e9);
  const uint64_t from_ns = now_ns > span_ns ? now_ns - span_ns : 0;
  const double own = host_blocked_s(s->rank, from_ns, now_ns);
  if (own < 0 || peers.empty()) return -1;
  std::vector<double> theirs;
  for (int p : peers) {
    const double b = host_blocked_s(p, from_ns, now_ns);
    if (b < 0) return -1;
    theirs.push_back(b);
  }
  const double median = median_of(std::move(theirs));
  s->evidence.host_blocked_s = own;
  s->evidence.peer_host_blocked_s = median;
  return std::max(0.0, median - own) / span_s;
}

}  // namespace xpu_timer::supervisor
