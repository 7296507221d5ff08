// What the hang detector knows about one expected rank at one instant: a
// compact copy of the status page's liveness part plus process liveness.
// Plain values; built by the poll loop (asio thread), consumed there.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/code_frame.h"
#include "common/status_page_layout.h"

namespace xpu_timer::supervisor {

struct RankSample {
  int rank = 0;
  bool registered = false;  // false: expected on this node, never registered
  int local_rank = -1;
  int node = -1;  // the node (torchrun's group rank) it runs on; -1: unknown
  pid_t pid = 0;
  std::string host;
  bool alive = false;          // process exists and is not a zombie
  bool connected = false;      // its registration socket is still open
  bool page_ok = false;        // the seqlock read of the page succeeded
  uint64_t registered_ns = 0;  // CLOCK_MONOTONIC of the registration
  uint64_t heartbeat_ns = 0;
  uint64_t issued_total = 0;
  uint64_t completed_total = 0;
  uint32_t inflight_count = 0;
  proto::OpRef oldest_inflight{};
  proto::OpRef last_completed{};
  std::vector<proto::CommSlot> comms;
  uint64_t dropped_queue_full = 0;
  uint64_t skipped_capture = 0;
  uint64_t hook_errors = 0;
  uint64_t queue_depth = 0;
  uint32_t page_flags = 0;  // proto::kPageFlag*
  // Training steps the rank counted (StatusPage::steps); step_source is
  // proto::StepSource, kNone (0) when the job marks no steps.
  uint64_t steps = 0;
  uint32_t step_source = 0;
  // When the page was read, on the CLOCK_MONOTONIC of the node that read it;
  // 0: the snapshot's now_ns (this node's ranks). The other nodes' ranks
  // (merge_job_snapshot) have their other times rebased onto this node's
  // clock but keep this one on their own: two samples of one rank come from
  // one node, so their difference is how long apart it was read, whatever
  // the clocks and however late the news (the stall tracker's measure).
  uint64_t read_ns = 0;
  // Where the rank was when its node last took its stacks for a standing
  // verdict (incidents/culprit_locations.h; its culprits only); empty:
  // unknown. Travels with the node's document, so every node names it.
  std::vector<CodeFrame> where;
  // Seconds since this rank's node (another node of the job) was last heard
  // from, once that is longer than the job view's freshness bound (its
  // supervisor died, a partition, the store lost): what else this sample
  // says is that node's last news, and the rank is not judged on it
  // (RankState::kSilent). 0: heard from.
  double silent_s = 0;
  // How old what this sample of another node's rank says is: the age of
  // its node's last snapshot (at least silent_s when silent). Longer than
  // silent_s when the node was heard of since by its lease alone (quiet
  // nodes put their progress only when its shape changes). 0: this node's
  // own rank.
  double news_age_s = 0;
  // Another node's rank whose newer news can still come: heard from (not
  // silent), or silent but its node heard from within the freshness bound
  // (the first rounds of an alarm, which quiet nodes learn of and answer a
  // round or two later). A new hang that rests on this rank, silent, or
  // named behind a collective on news older than the collective's wait, is
  // not declared until the news comes or the bound passes (HangDetector).
  bool news_pending = false;
  // The Python line that issued its oldest collective in flight, from its
  // flight recorder (inject/call_sites.h); empty: unknown. This node's
  // ranks only: it does not travel with the node's document.
  std::vector<CodeFrame> issued_at;
};

struct Snapshot {
  uint64_t now_ns = 0;            // CLOCK_MONOTONIC, the clock of every page time
  double now_unix_s = 0;          // wall clock of the same instant, for reports
  std::vector<RankSample> ranks;  // sorted by rank
};

}  // namespace xpu_timer::supervisor
