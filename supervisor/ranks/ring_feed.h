// The one reader of the ranks' flight recorders (common/recorder_ring.h) in
// the supervisor: each read() reads every rank's ring once and hands what it
// found to every consumer, in the order they were added (the collective
// check, the straggler analysis, ...), so that no part of the supervisor
// follows a ring with a cursor of its own.
//
// A record is appended when the rank's Poller drains it and rewritten in
// place when it starts and completes, so one record is handed over twice:
//  - `fresh`: the first time it is read, as it was then (a collective may
//    still be in flight: its fingerprint and call site are already final,
//    and a mismatched collective often never completes);
//  - `final`: once it is completed, failed or sampled out (a host range is
//    appended final). The feed keeps, per rank, the lowest position not yet
//    final and rereads from there; a record unfinished longer than kGiveUpNs
//    (a hang) is passed over, so that one stuck operation does not make
//    every read copy the whole ring.
// A position torn by a write in progress is read again on the next reads,
// for up to kGiveUpNs: a write takes microseconds, but its thread may be
// preempted midway for tens of milliseconds on a loaded machine (read every
// 5 ms, a fixed number of retries lost the record of a mismatched collective
// that way); only a writer that died or stays stopped mid-write holds it
// longer. A position overwritten by a later lap before it was read, or torn
// for longer than that, is lost for every consumer: counted, and said once
// per rank.
//
// Threads: one (the supervisor's asio thread): read() and the consumers it
// calls, and the accessors.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "common/recorder_ring.h"
#include "supervisor/ranks/rank_registry.h"

namespace xpu_timer::supervisor {

// What one read of one rank's ring brought. Both lists are in ring order.
struct RingRead {
  int rank = -1;
  pid_t pid = 0;
  uint64_t now_ns = 0;  // CLOCK_MONOTONIC of the read, the clock of the records' times
  // The ring's header and its regions as read now (names, call sites). Its
  // `records` are all that was read, rereads included: take those below.
  const recorder::RingSnapshot* ring = nullptr;
  const std::vector<recorder::RecordData>* fresh = nullptr;  // read for the first time
  const std::vector<recorder::RecordData>* final = nullptr;  // final since the last read
};

class RingConsumer {
 public:
  virtual ~RingConsumer() = default;
  // Once per rank and read() whose ring could be read, even with nothing new.
  virtual void on_ring_read(const RingRead& read) = 0;
};

class RingFeed {
 public:
  static constexpr uint64_t kGiveUpNs = 10ull * 1000 * 1000 * 1000;

  // Consumers are called in this order; each must outlive the feed's reads.
  void add_consumer(RingConsumer* c) { consumers_.push_back(c); }

  // Reads every rank's ring once and hands each consumer what is new.
  // `now_ns`: CLOCK_MONOTONIC.
  void read(const std::vector<RankRecord>& records, uint64_t now_ns);

  // How soon the rings should be read again (between `min_ns` and
  // `max_ns`): before the fastest rank's ring has a quarter of it rewritten,
  // so that no record is overwritten unread, however fast the job (a rank
  // read once only is read again soon, its rate unknown).
  uint64_t next_read_delay_ns(uint64_t min_ns, uint64_t max_ns) const;
  // Whether the ring of `rank` (process `pid`) was read already.
  bool follows(int rank, pid_t pid) const;
  // Records of the rings overwritten before they could be read, in all.
  uint64_t records_lost() const;
  // Records read again in the last read() although already handed over as
  // final (the cost of rereading behind an unfinished one).
  uint64_t reread() const { return reread_; }

 private:
  struct Torn {
    uint64_t since_ns = 0;   // the first read that found it torn
    bool fresh_due = false;  // never read whole: not yet handed over as fresh
  };
  struct Cursor {
    pid_t pid = 0;
    uint64_t from = 0;              // the lowest position that may still change
    uint64_t next = 0;              // positions from here were never read
    std::set<uint64_t> finals;      // positions >= from handed over as final
    std::map<uint64_t, Torn> torn;  // positions >= from torn when read
    uint64_t read_ns = 0;           // when it was read last (0: never)
    uint64_t head = 0;              // the ring's head then
    double per_s = 0;               // records appended a second, as of the last two reads
    uint32_t capacity = 0;
    uint64_t lost = 0;       // records overwritten before they were read, or never whole
    bool lost_said = false;  // said once in the log
    bool torn_said = false;
  };
  // Sorts the records of snap_ into fresh_ and final_ and moves the cursor.
  void advance(int rank, uint64_t now_ns, Cursor* cur);
  // Counts (and says once) what the ring overwrote before it was read.
  void note_lost(int rank, Cursor* cur) const;

  std::vector<RingConsumer*> consumers_;
  std::map<int, Cursor> cursors_;
  // Reused across reads.
  recorder::RingSnapshot snap_;
  std::vector<recorder::RecordData> fresh_, final_;
  uint64_t reread_ = 0;
};

}  // namespace xpu_timer::supervisor
