#include "supervisor/analysis/stall_tracker.h"

#include <algorithm>

#include "common/status_page_layout.h"

namespace xpu_timer::supervisor {

void StallTracker::note(const Snapshot& snap) {
  for (const RankSample& s : snap.ranks) {
    if (!s.registered || !s.alive || !s.page_ok) continue;  // no news
    const uint64_t at = s.read_ns != 0 ? s.read_ns : snap.now_ns;
    auto [it, inserted] = ranks_.try_emplace(s.rank);
    Still& st = it->second;
    const bool same_process = !inserted && st.pid == s.pid;
    if (same_process && at < st.last_ns) continue;  // older news than we hold
    if (same_process && st.issued == s.issued_total && st.completed == s.completed_total &&
        s.inflight_count == 0) {
      st.last_ns = at;
      continue;
    }
    // Something moved, or is in flight: still from this read on at the
    // earliest.
    st = Still{s.pid, s.node, s.issued_total, s.completed_total, at, at};
  }
}

std::optional<double> StallTracker::still_s(const Snapshot& snap, bool need_news) const {
  if (snap.ranks.empty()) return std::nullopt;
  uint64_t shortest = UINT64_MAX;
  for (const RankSample& s : snap.ranks) {
    if (!s.registered || !s.alive) return std::nullopt;
    if (s.page_flags & proto::kPageFlagTimingDisabled) return std::nullopt;
    if (s.page_ok ? s.inflight_count > 0 : need_news) return std::nullopt;
    const auto it = ranks_.find(s.rank);
    if (it == ranks_.end() || it->second.pid != s.pid) return std::nullopt;
    shortest = std::min(shortest, it->second.last_ns - it->second.first_ns);
  }
  return static_cast<double>(shortest) / 1e9;
}

std::optional<double> StallTracker::node_still_s(int node) const {
  std::optional<double> shortest;
  for (const auto& [rank, st] : ranks_) {
    if (st.node != node) continue;
    const double s = static_cast<double>(st.last_ns - st.first_ns) / 1e9;
    shortest = shortest ? std::min(*shortest, s) : s;
  }
  return shortest;
}

}  // namespace xpu_timer::supervisor
