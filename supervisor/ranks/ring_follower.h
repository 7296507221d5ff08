// Hands every record of the ranks' flight recorders (common/recorder_ring.h)
// to a consumer once, when it is final: completed, failed or sampled out, or
// a host range (appended final). A record is appended when the Poller drains
// it and rewritten in place when it starts and completes, so a follower
// cannot simply read from where it stopped: it keeps, per rank, the lowest
// position not yet final and rereads from there. A record that stays
// unfinished longer than kGiveUpNs (a hang) is passed over, so that one
// stuck operation does not make every poll reread the whole ring.
//
// Threads: one (the supervisor's asio thread).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "common/recorder_ring.h"
#include "supervisor/ranks/rank_registry.h"

namespace xpu_timer::supervisor {

class RingFollower {
 public:
  static constexpr uint64_t kGiveUpNs = 10ull * 1000 * 1000 * 1000;
  using Fn = std::function<void(int rank, const recorder::RecordData&)>;

  // Reads every rank's ring and calls `fn` for each record that became final
  // since the last call (or, for a rank seen first, for each final record of
  // its window). `now_ns`: CLOCK_MONOTONIC, the clock of the records' times.
  void follow(const std::vector<RankRecord>& records, uint64_t now_ns, const Fn& fn);

  // Records read again in the last call although already handed over (a
  // measure of the rereading's cost).
  uint64_t reread() const { return reread_; }

 private:
  struct Cursor {
    pid_t pid = 0;
    uint64_t from = 0;              // the lowest position that may still change
    std::set<uint64_t> delivered;   // positions >= from already handed over
    uint64_t torn_pos = UINT64_MAX;  // a position torn at the last read
    int torn_retries = 0;
  };
  std::map<int, Cursor> cursors_;
  recorder::RingSnapshot snap_;  // reused
  uint64_t reread_ = 0;
};

}  // namespace xpu_timer::supervisor
