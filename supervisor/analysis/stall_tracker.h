// How long the ranks of a job have stood still: nothing in flight, nothing
// issued, nothing completed (docs/architecture.md "Hang detection", stall).
// Pure logic, owned by the HangDetector (asio thread).
//
// For each rank it keeps (pid, issued total, completed total) with the first
// and the latest read of its page that showed them with nothing in flight,
// both on the clock of the node that read the page (RankSample::read_ns).
// The totals only grow while a process lives, so equal totals at two reads
// mean that nothing was issued or completed between them, however far apart
// the reads and however late their news reached us: a rank has stood still
// for the time between those two reads, never more. A sample without news
// (its page not read, never registered, exited, another node's snapshot too
// old to merge) changes nothing: it can neither lengthen a stillness nor end
// it. So another node's stale document can never make its ranks look still
// for longer than that node itself saw them still.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>

#include "supervisor/analysis/rank_sample.h"

namespace xpu_timer::supervisor {

class StallTracker {
 public:
  // Notes what each rank's page says in `snap`.
  void note(const Snapshot& snap);

  // How long every expected rank of `snap` has stood still (the shortest of
  // them), in seconds; nullopt when some rank cannot be stalled: never
  // registered, exited, something in flight, its timing off after a CUDA
  // error (its page says nothing in flight whatever it does), or not seen
  // still yet. With `need_news`, every rank's page must have been read in
  // `snap` too (a stall is declared only on news; once declared, a page that
  // could not be read this time does not end it).
  std::optional<double> still_s(const Snapshot& snap, bool need_news) const;

  // The shortest stillness among the ranks of `node` (torchrun's group
  // rank) seen so far; nullopt when none was seen.
  std::optional<double> node_still_s(int node) const;

 private:
  struct Still {
    pid_t pid = 0;
    int node = -1;
    uint64_t issued = 0;
    uint64_t completed = 0;
    uint64_t first_ns = 0;  // the first read showing these totals, idle
    uint64_t last_ns = 0;   // the latest such read
  };
  std::map<int, Still> ranks_;
};

}  // namespace xpu_timer::supervisor
