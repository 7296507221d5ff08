// One time axis for the ranks of a trace. Ranks dumped into one folder ran on
// one host and share its CLOCK_MONOTONIC: their times are used as they are.
// Ranks from several folders (several nodes) do not: each is mapped to
// wall-clock time through its ring header's (created_mono_ns,
// created_realtime_ns) pair, taken at one instant when the ring was created.
// That mapping is as good as the hosts' clock synchronisation (NTP/PTP).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "timeline/dump_loader.h"

namespace xpu_timer::timeline {

class TraceClock {
 public:
  // Warnings go to *warnings (a rank with no wall-clock reference).
  TraceClock(const LoadedDumps& dumps, std::vector<std::string>* warnings);

  // A record time of dumps.ranks[rank_index] on the common axis (ns); nullopt
  // for 0 (unknown) or a value that does not fit.
  std::optional<int64_t> at(size_t rank_index, uint64_t ns) const;
  // A wall-clock time (hang.json's detected_at) of a folder on the common axis.
  std::optional<int64_t> from_unix_s(size_t folder, double unix_s) const;
  // Maps a time on the common axis back to Unix ns, when known.
  std::optional<int64_t> to_unix_ns(int64_t t) const;
  bool wall_clock() const { return wall_; }

 private:
  const LoadedDumps& dumps_;
  bool wall_ = false;
  std::vector<int64_t> offset_;  // per rank: common axis = record time + offset
};

}  // namespace xpu_timer::timeline
