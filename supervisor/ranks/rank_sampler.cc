#include "supervisor/ranks/rank_sampler.h"

#include <time.h>

#include "supervisor/job/process_table.h"

namespace xpu_timer::supervisor {

// Rereads of a busy page, and the pause before each: 10 ms at most per rank
// and poll, only while its writer is descheduled mid-write.
constexpr int kBusyRetries = 10;
constexpr long kBusyPauseNs = 1000 * 1000;

void pause_for_busy_page() {
  const timespec pause{0, kBusyPauseNs};
  nanosleep(&pause, nullptr);
}

void read_page(const proto::StatusPageFile& page, proto::StatusSnapshot* scratch,
               const std::function<void()>& pause) {
  page.read(scratch);
  for (int retry = 0;
       retry < kBusyRetries && !scratch->page_ok() && scratch->error().rfind("busy", 0) == 0;
       ++retry) {
    pause();
    page.read(scratch);
  }
}

RankSample sample_rank(const RankRecord& record, proto::StatusSnapshot* scratch) {
  RankSample s;
  s.rank = record.reg.rank;
  s.registered = true;
  s.local_rank = record.reg.local_rank;
  s.node = record.reg.group_rank;
  s.pid = record.reg.pid;
  s.host = record.reg.host;
  s.connected = record.connected;
  s.alive = process_alive(record.reg.pid, record.start_time);
  s.registered_ns = record.registered_ns;
  if (record.page == nullptr) return s;
  read_page(*record.page, scratch, pause_for_busy_page);
  s.heartbeat_ns = scratch->heartbeat_ns();  // known even when the rest is busy
  if (!scratch->page_ok()) return s;
  const proto::StatusPage& p = scratch->page();  // validated: counts within their tables
  s.page_ok = true;
  s.issued_total = p.issued_total;
  s.completed_total = p.completed_total;
  s.inflight_count = p.inflight_count;
  s.oldest_inflight = p.oldest_inflight;
  s.last_completed = p.last_completed;
  s.comms.assign(p.comms, p.comms + p.ncomms);
  s.dropped_queue_full = p.dropped_queue_full;
  s.skipped_capture = p.skipped_capture;
  s.hook_errors = p.hook_errors;
  s.queue_depth = p.queue_depth;
  s.page_flags = p.flags;
  s.steps = p.steps.steps;
  s.step_source = p.steps.source;
  return s;
}

Snapshot take_snapshot(const std::vector<RankRecord>& records, proto::StatusSnapshot* scratch) {
  Snapshot snap;
  const std::vector<int> expected = expected_ranks(records);
  snap.ranks.reserve(expected.size());
  size_t next = 0;  // records are sorted by rank (the registry is a std::map)
  for (int rank : expected) {
    while (next < records.size() && records[next].reg.rank < rank) ++next;
    if (next < records.size() && records[next].reg.rank == rank) {
      snap.ranks.push_back(sample_rank(records[next], scratch));
    } else {
      RankSample missing;
      missing.rank = rank;
      snap.ranks.push_back(missing);
    }
  }
  // Sample the clocks after the pages: a page time is then never in the future.
  snap.now_ns = monotonic_ns();
  snap.now_unix_s = unix_now_s();
  return snap;
}

}  // namespace xpu_timer::supervisor
