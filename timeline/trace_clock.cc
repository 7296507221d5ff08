#include "timeline/trace_clock.h"

#include <cmath>
#include <limits>

namespace xpu_timer::timeline {
namespace {

constexpr uint64_t kMaxNs = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// realtime - mono of a header, when both are known and fit.
std::optional<int64_t> mono_to_wall(const recorder::RingSnapshot& s) {
  if (s.created_realtime_ns == 0 || s.created_mono_ns == 0 || s.created_realtime_ns > kMaxNs ||
      s.created_mono_ns > kMaxNs) {
    return std::nullopt;
  }
  return static_cast<int64_t>(s.created_realtime_ns) - static_cast<int64_t>(s.created_mono_ns);
}

}  // namespace

TraceClock::TraceClock(const LoadedDumps& dumps, std::vector<std::string>* warnings)
    : dumps_(dumps), offset_(dumps.ranks.size(), 0) {
  size_t first_folder = dumps.ranks.empty() ? 0 : dumps.ranks[0].folder;
  for (const RankTimeline& t : dumps.ranks) wall_ = wall_ || t.folder != first_folder;
  if (!wall_) return;
  for (size_t i = 0; i < dumps.ranks.size(); ++i) {
    const std::optional<int64_t> off = mono_to_wall(dumps.ranks[i].ring);
    if (off) {
      offset_[i] = *off;
    } else {
      warnings->push_back("rank " + std::to_string(dumps.ranks[i].rank) +
                          ": its dump has no wall-clock reference; its times are not aligned "
                          "with the other folders'");
    }
  }
}

std::optional<int64_t> TraceClock::at(size_t rank_index, uint64_t ns) const {
  if (ns == 0 || ns > kMaxNs) return std::nullopt;
  int64_t out = 0;
  if (__builtin_add_overflow(static_cast<int64_t>(ns), offset_[rank_index], &out)) {
    return std::nullopt;
  }
  return out;
}

std::optional<int64_t> TraceClock::from_unix_s(size_t folder, double unix_s) const {
  const double ns = unix_s * 1e9;
  if (!std::isfinite(ns) || ns <= 0 || ns >= 9.2e18) return std::nullopt;
  const int64_t wall = static_cast<int64_t>(ns);
  if (wall_) return wall;
  // One host: back to its monotonic clock through any of its rings' pairs.
  for (const RankTimeline& t : dumps_.ranks) {
    if (t.folder != folder) continue;
    if (const std::optional<int64_t> off = mono_to_wall(t.ring)) return wall - *off;
  }
  return std::nullopt;
}

std::optional<int64_t> TraceClock::to_unix_ns(int64_t t) const {
  if (wall_) return t;
  if (dumps_.ranks.empty()) return std::nullopt;
  const std::optional<int64_t> off = mono_to_wall(dumps_.ranks[0].ring);
  if (!off) return std::nullopt;
  int64_t out = 0;
  if (__builtin_add_overflow(t, *off, &out)) return std::nullopt;
  return out;
}

}  // namespace xpu_timer::timeline
