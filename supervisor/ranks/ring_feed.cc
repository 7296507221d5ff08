#include "supervisor/ranks/ring_feed.h"

#include <algorithm>
#include <string>

#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {
namespace {

bool is_final(const recorder::RecordData& d) {
  if (recorder::is_host_range(d)) return true;
  using recorder::OpState;
  return d.state == static_cast<uint8_t>(OpState::kCompleted) ||
         d.state == static_cast<uint8_t>(OpState::kFailed) ||
         d.state == static_cast<uint8_t>(OpState::kUntimed);
}

uint64_t window_start(const recorder::RingSnapshot& s) {
  return s.head > s.capacity ? s.head - s.capacity : 0;
}

}  // namespace

void RingFeed::read(const std::vector<RankRecord>& records, uint64_t now_ns) {
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
    if (cur.read_ns != 0 && now_ns > cur.read_ns && snap_.head >= cur.head) {
      cur.per_s = static_cast<double>(snap_.head - cur.head) * 1e9 /
                  static_cast<double>(now_ns - cur.read_ns);
    }
    cur.read_ns = now_ns;
    cur.head = snap_.head;
    cur.capacity = snap_.capacity;
    note_lost(r.reg.rank, &cur);
    advance(r.reg.rank, now_ns, &cur);
    const RingRead read{r.reg.rank, r.reg.pid, now_ns, &snap_, &fresh_, &final_};
    for (RingConsumer* c : consumers_) c->on_ring_read(read);
  }
}

void RingFeed::note_lost(int rank, Cursor* cur) const {
  // Positions before the ring's window were overwritten unread.
  const uint64_t start = window_start(snap_);
  if (cur->next >= start) return;
  cur->lost += start - cur->next;
  if (cur->lost_said) return;
  cur->lost_said = true;
  SUP_LOG_WARN(
      "rank %d: %llu flight-recorder records were overwritten before the supervisor read them "
      "(its ring holds %u; XPU_TIMER_RECORDER_SIZE): their collectives are not checked",
      rank, static_cast<unsigned long long>(start - cur->next), snap_.capacity);
}

void RingFeed::advance(int rank, uint64_t now_ns, Cursor* cur) {
  fresh_.clear();
  final_.clear();
  const uint64_t head = snap_.head;
  uint64_t from = head;  // the next read's start
  // A position the reader skipped: a write was in progress (or a later lap
  // overwrote it while it was read). Read again until it is whole, or torn
  // for kGiveUpNs (its writer died or stays stopped mid-write).
  auto torn_at = [&](uint64_t pos) {
    Torn& t = cur->torn[pos];
    t.fresh_due = t.fresh_due || pos >= cur->next;
    if (t.since_ns == 0) t.since_ns = std::max<uint64_t>(now_ns, 1);
    if (now_ns - std::min(now_ns, t.since_ns) < kGiveUpNs) {
      from = std::min(from, pos);
      return;
    }
    if (t.fresh_due) ++cur->lost;  // never handed over
    t.fresh_due = false;
    if (cur->torn_said) return;
    cur->torn_said = true;
    SUP_LOG_WARN(
        "rank %d: flight-recorder record %llu stayed half-written for %llu s (its writer stopped "
        "mid-write?): passed over",
        rank, static_cast<unsigned long long>(pos),
        static_cast<unsigned long long>(kGiveUpNs / 1000000000ull));
  };
  // The positions read are [max(from, window start), head), oldest first.
  uint64_t expect = std::max(cur->from, window_start(snap_));
  for (const recorder::RecordData& d : snap_.records) {
    const uint64_t pos = d.op_id;
    if (pos < expect) continue;
    for (; expect < pos; ++expect) torn_at(expect);
    expect = pos + 1;
    bool fresh = pos >= cur->next;
    const auto torn = cur->torn.find(pos);
    if (torn != cur->torn.end()) {
      fresh = fresh || torn->second.fresh_due;
      cur->torn.erase(torn);
    }
    if (fresh) fresh_.push_back(d);
    if (cur->finals.count(pos) != 0) {
      ++reread_;
      continue;
    }
    if (is_final(d)) {
      final_.push_back(d);
      cur->finals.insert(pos);
    } else if (d.launch_ns == 0 || now_ns - std::min(now_ns, d.launch_ns) < kGiveUpNs) {
      from = std::min(from, pos);
    }
  }
  for (; expect < head; ++expect) torn_at(expect);
  // Never further back than the ring holds.
  from = std::max(from, window_start(snap_));
  cur->from = from;
  cur->next = head;
  cur->finals.erase(cur->finals.begin(), cur->finals.lower_bound(from));
  cur->torn.erase(cur->torn.begin(), cur->torn.lower_bound(from));
}

uint64_t RingFeed::next_read_delay_ns(uint64_t min_ns, uint64_t max_ns) const {
  uint64_t delay = max_ns;
  for (const auto& [rank, cur] : cursors_) {
    if (cur.read_ns == 0) continue;
    if (cur.per_s <= 0) {
      delay = std::min(delay, 4 * min_ns);  // its rate unknown yet
      continue;
    }
    const double quarter_s = static_cast<double>(cur.capacity) / 4 / cur.per_s;
    delay = std::min(delay, static_cast<uint64_t>(quarter_s * 1e9));
  }
  return std::max(delay, min_ns);
}

bool RingFeed::follows(int rank, pid_t pid) const {
  const auto it = cursors_.find(rank);
  return it != cursors_.end() && it->second.pid == pid && it->second.read_ns != 0;
}

uint64_t RingFeed::records_lost() const {
  uint64_t n = 0;
  for (const auto& [rank, cur] : cursors_) n += cur.lost;
  return n;
}

}  // namespace xpu_timer::supervisor
