// Hang detection over snapshots of the ranks' status pages. Pure logic, no
// I/O, so it is unit-tested on synthetic snapshots. Owned and called by the
// poll loop (asio thread); its report is copied out for HTTP.
//
// Semantics (docs/architecture.md "Hang detection"):
//  - stuck: an operation in flight started on the GPU (its start marker
//    completed: the work before it on its stream had finished) longer than
//    the timeout ago. Its wait in the queue behind earlier work does not
//    count: a healthy stream may hold more queued work than the timeout.
//    Fallback for a GPU that stopped where we cannot see it (in a kernel we
//    do not time, with no peer waiting): nothing in flight has started and
//    the oldest operation was launched more than kNotStartedFactor x the
//    timeout ago ("not started");
//  - unresponsive: the page's heartbeat has not moved for max(10 s, timeout)
//    while the process lives (its page is then not trusted);
//  - missing (only while some rank is stuck): behind on a communicator that a
//    stuck rank waits on (issued_seq < the stuck seq), or issued that
//    collective but has not started it on its GPU (the earlier work on its
//    stream never finished), or no operation in flight, or never registered;
//  - exited: the process is gone;
//  - silent: its node, another node of the job, has not been heard from for
//    longer than the job view's freshness bound (RankSample::silent_s): its
//    ranks are not judged on old news. A stuck rank waits for a silent
//    member of its collective only when no member heard from explains the
//    wait (then the silent node's ranks are the roots); the verdict says
//    "node 3 not heard from for 40.0 s (ranks 24-31)" either way. A new hang
//    whose roots include a silent rank whose node's news is on its way
//    (RankSample::news_pending: heard from within the freshness bound), or
//    a collective with such a member (its last news, older than the wait,
//    could not say whether it joined), is declared once that news comes or
//    the bound passes.
// A hang is at least one stuck rank. It clears when a rank that was stuck
// completes more operations (or is replaced by a new process); if the stuck
// ranks merely die, the last hang report stays for the post-mortem.
//
// A stall (stall factor x timeout > 0, no hang standing): every expected rank
// is registered and alive with nothing in flight, and no rank issued or
// completed an operation for the stall time (stall_tracker.h measures it on
// each node's own clock). Its ranks are `stalled`, or `unresponsive` when
// their heartbeat is stale (a stopped process stalls the job all the same).
// It clears as soon as any rank issues or completes an operation (or exits).
// A hang takes precedence: no stall is judged while a hang stands.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// comm_hex, comm_phrase, ranks_phrase: the names the verdicts use. Included
// here for the detector's users that name communicators too.
#include "common/comm_names.h"
#include "supervisor/analysis/rank_sample.h"
#include "supervisor/analysis/stall_tracker.h"
#include "supervisor/analysis/wait_graph.h"

namespace xpu_timer::supervisor {

enum class RankState { kOk, kStuck, kMissing, kUnresponsive, kExited, kStalled, kSilent };
const char* rank_state_name(RankState s);

enum class MissingReason { kNone, kBehind, kNotStarted, kIdle, kNeverRegistered };

// A rank with nothing in flight started on its GPU is stuck only once its
// oldest operation was launched this many timeouts ago (see above): queued
// work longer than that would be taken for a hang.
constexpr double kNotStartedFactor = 3.0;
const char* missing_reason_name(MissingReason r);

struct RankVerdict {
  int rank = 0;
  RankState state = RankState::kOk;
  bool registered = false;
  pid_t pid = 0;
  int local_rank = -1;
  int node = -1;  // torchrun's group rank; -1: unknown
  std::string host;
  // kStuck: the operation the hang clock follows (the page's oldest_inflight).
  bool has_op = false;
  proto::OpRef op{};
  double pending_s = 0;   // now - op.launch_ns
  double running_s = -1;  // now - op.started_ns; -1 when not started on the GPU
  // kStuck with nothing started on the GPU (the fallback above): its clock
  // is pending_s, else running_s.
  bool not_started = false;
  // kMissing
  MissingReason reason = MissingReason::kNone;
  bool has_comm = false;  // the fields below describe the stuck communicator
  uint64_t comm_hash = 0;
  std::string comm_name;    // its name (StuckGroup::comm_name), "" = unknown
  uint64_t waited_seq = 0;  // the collective the stuck ranks are in
  uint64_t issued_seq = 0;
  uint64_t last_completed_seq = 0;
  // kUnresponsive
  double heartbeat_age_s = 0;
  // kSilent: how long its node has not been heard from.
  double silent_s = 0;
  // kUnresponsive because timing is off after a CUDA error (its page says
  // nothing in flight whatever it does), not because its heartbeat stopped.
  bool timing_disabled = false;
  // Where it was when its stacks were taken (RankSample::where): named in the
  // sentence for a culprit (missing, unresponsive, stalled).
  std::vector<CodeFrame> where;
  // The Python line that issued the operation it is in (RankSample::issued_at).
  std::vector<CodeFrame> issued_at;
  // kStuck in a collective: the members it waits for (wait_graph.h).
  std::vector<WaitEdge> waits_for;
};

// Stuck ranks that wait in the same operation (same communicator and
// sequence number for NCCL, same name otherwise).
struct StuckGroup {
  uint8_t kind = 0;   // proto::OpKind
  uint16_t name = 0;  // proto::OpName
  uint64_t comm_hash = 0;
  // The name a member's page gives the communicator (proto::CommSlot::name);
  // "" = unknown.
  std::string comm_name;
  uint64_t seq = 0;
  // The ranks are stuck with nothing started on the GPU (RankVerdict::not_started).
  bool not_started = false;
  std::vector<int> ranks;
  // Ranks this communicator waits for: behind on it, or not started in the
  // collective (MissingReason::kNotStarted).
  std::vector<int> missing;
  double pending_s = 0;  // the longest time since launch among `ranks`
  // The longest hang clock among `ranks`: since the operation started on the
  // GPU (or, not_started, since launch).
  double waiting_s = 0;
};

struct HangReport {
  bool hung = false;
  std::optional<double> detected_at_unix_s;
  // Set when the hang stands although no rank is stuck any more (its stuck
  // ranks died or stopped without completing): the report is kept for the
  // post-mortem, its durations as of this instant.
  std::optional<double> frozen_since_unix_s;
  double timeout_s = 0;
  std::string summary = "no hang";
  std::vector<RankVerdict> ranks;  // every expected rank, sorted
  std::vector<StuckGroup> groups;
  // What every stuck rank ultimately waits on (wait_graph.h): the culprits.
  std::vector<HangRoot> roots;
  // A stall (see above; never with `hung`): unix seconds since which nothing
  // was issued or completed (as first judged), and for how long as of this
  // report.
  bool stalled = false;
  std::optional<double> stalled_since_unix_s;
  double stalled_s = 0;
};

// The verdict of `rank` in `report` (whose ranks are sorted); nullptr: none.
const RankVerdict* find_verdict(const HangReport& report, int rank);

// "node 3 not heard from for 40.0 s (ranks 24-31)": the silent ranks of
// `node` in `report` (without the duration when `with_durations` is false);
// "" when it has none.
std::string silent_node_phrase(const HangReport& report, int node, bool with_durations);
// The nodes of the report's silent ranks, in order.
std::vector<int> silent_nodes(const HangReport& report);

// One snapshot classified with no history (the core of the detector).
HangReport classify_snapshot(const Snapshot& snap, double timeout_s);

// When the waits span several communicators or levels (wait_graph_is_deep),
// the roots first, then who waits on them: "rank 3 missing (last completed
// #20 on comm 6c0a... (tp)), in wait_for_shard (tpdp.py:15); waiting on it:
// rank 2 in AllReduce #21 on tp, rank 1 in AllReduce #21 on dp; behind them:
// rank 0 in AllReduce #21 on dp". Else, one communicator:
// "ranks 0,1,3 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b (tp_group) for
// 5.2 s; rank 2 missing (last completed #5 on that comm), in
// stuck_in_host_code (sim_trainer.py:181) <- train_step (sim_trainer.py:226)"
// (the name only when a page gives one: comm_phrase; a culprit's place once
// its stacks are in: where_clause), the duration being the hang
// clock (StuckGroup::waiting_s). A stall: "ranks 0-3 stalled: nothing in
// flight and nothing issued or completed for 12.5 s; rank 2 unresponsive (no
// heartbeat for 11.0 s)" (ranks folded: fold_ranks). Durations omitted when
// `with_durations` is false (used to tell a changed hang from an older one).
std::string hang_sentence(const HangReport& report, bool with_durations = true);

// kDetected, kChanged and kCleared concern the verdict that stands: a hang,
// or a stall when report().stalled (kCleared: when it stood before).
enum class HangEvent { kNone, kDetected, kChanged, kCleared };

class HangDetector {
 public:
  // `stall_factor` x `timeout_s`: the stall time; 0 judges no stall.
  // The report carries `timeout_s` from the start (the hang document's
  // timeout_s, before the first update too).
  explicit HangDetector(double timeout_s, double stall_factor = 0)
      : timeout_s_(timeout_s), stall_s_(stall_factor * timeout_s) {
    report_.timeout_s = timeout_s;
  }

  HangEvent update(const Snapshot& snap);
  // New thresholds (POST /config), for the next update on. A lower timeout
  // declares a hang at the next update if some rank is past it already; a
  // hang that stands stays judged by the timeout it was declared under until
  // it clears (raising the timeout does not undo it). A stall is judged
  // against the new stall time at once.
  void set_thresholds(double timeout_s, double stall_factor);
  const HangReport& report() const { return report_; }
  double timeout_s() const { return timeout_s_; }  // the --hang-timeout judged with
  double stall_s() const { return stall_s_; }
  // Whether `node` (torchrun's group rank) needs every node's fresh news
  // (wants_job_view): a hang or a stall stands, or its ranks have stood
  // still for half the stall time, so that a stall is judged over snapshots
  // a second or two old rather than those a quiet job exchanges rarely.
  bool wants_fresh_news(int node) const;

 private:
  // No hang stands: judges the stall over `now`, the snapshot's report.
  HangEvent judge_stall(const Snapshot& snap, HangReport now);

  double timeout_s_;
  double stall_s_;
  StallTracker still_;
  HangReport report_;
  std::string signature_;
  // Ranks seen stuck in the current hang: rank -> (pid, completed_total).
  std::map<int, std::pair<pid_t, uint64_t>> stuck_baseline_;
};

}  // namespace xpu_timer::supervisor
