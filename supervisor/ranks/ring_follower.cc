#include "supervisor/ranks/ring_follower.h"

#include <algorithm>
#include <string>

#include "common/protocol.h"

namespace xpu_timer::supervisor {
namespace {

bool is_final(const recorder::RecordData& d) {
  if (d.kind == static_cast<uint8_t>(proto::OpKind::kRange)) return true;
  using recorder::OpState;
  return d.state == static_cast<uint8_t>(OpState::kCompleted) ||
         d.state == static_cast<uint8_t>(OpState::kFailed) ||
         d.state == static_cast<uint8_t>(OpState::kUntimed);
}

}  // namespace

void RingFollower::follow(const std::vector<RankRecord>& records, uint64_t now_ns, const Fn& fn) {
  reread_ = 0;
  for (const RankRecord& r : records) {
    if (!r.ring) continue;
    Cursor& cur = cursors_[r.reg.rank];
    if (cur.pid != r.reg.pid) {  // a new process: its own ring
      cur = Cursor();
      cur.pid = r.reg.pid;
    }
    std::string error;
    if (!r.ring->read(&snap_, &error, cur.from)) continue;  // truncated: the rank is going away
    uint64_t next = snap_.head;
    for (const recorder::RecordData& d : snap_.records) {
      const uint64_t pos = d.op_id;
      if (pos < cur.from) continue;
      if (cur.delivered.count(pos) != 0) {
        ++reread_;
        continue;
      }
      if (is_final(d)) {
        fn(r.reg.rank, d);
        cur.delivered.insert(pos);
      } else if (d.launch_ns == 0 || now_ns - std::min(now_ns, d.launch_ns) < kGiveUpNs) {
        next = std::min(next, pos);
      }
    }
    // A position being rewritten as it was read: read again next time, a few
    // times (a record is rewritten only when its state changes).
    if (snap_.first_skipped != UINT64_MAX && snap_.first_skipped >= cur.from) {
      cur.torn_retries = snap_.first_skipped == cur.torn_pos ? cur.torn_retries + 1 : 0;
      cur.torn_pos = snap_.first_skipped;
      if (cur.torn_retries < 3) next = std::min(next, snap_.first_skipped);
    }
    // Never further back than the ring holds.
    if (snap_.head > snap_.capacity) next = std::max(next, snap_.head - snap_.capacity);
    cur.from = next;
    cur.delivered.erase(cur.delivered.begin(), cur.delivered.lower_bound(next));
  }
}

}  // namespace xpu_timer::supervisor
