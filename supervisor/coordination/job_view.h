// The job beyond this node: the supervisor's link to the coordination store
// (coordination_store.h) when the job spans several nodes (--coordinator).
// <root> is /xpu_timer/<job id>; keys are put under the store client's
// lease, so a dead supervisor's entries expire.
//
// A thread of its own (store calls block up to their timeout; the asio
// thread never waits for the store) runs one round every publish period,
// each part of the view in turn, one concern each:
//   - KeyTrust (key_trust.h): claims this node's owner key and reads the
//     owners; a key of another node counts only under its owner's lease;
//   - NodeAlarms (node_alarms.h): whether this node wants the job's view
//     now, and which nodes do;
//   - LeaderElection (leader_election.h): which node reads every node's
//     stamps and slow-rank summaries and sums them up for the others;
//   - ProgressExchange (progress_exchange.h): while any node raises an
//     alarm (and every kQuietRefreshS otherwise), this node's document and
//     stamp out, the other nodes' in, for merge();
//   - DumpRequests (dump_requests.h): this node's requests out, the other
//     nodes' in, handed to `on_request`;
//   - FingerprintExchange (fingerprint_exchange.h): the job-wide collective
//     comparison's windows and mismatches;
//   - SlowSummaryExchange (slow_summary_exchange.h): every node's slow-rank
//     summary.
// A round stops at the first store call that fails; the parts it did not
// reach run next round.
//
// merge() joins only snapshots whose stamp is at most kFreshS old: an older
// one would show its ranks' operations in flight for as long as it is old.
// While an alarm stands, the ranks of a node with older news, or whose keys
// left the store (its supervisor died: its lease ended), stay in the merge
// silent (RankSample::silent_s): the hang detector does not judge them and
// its verdict says how long their node has not been heard from; they are
// the hang's culprits only when no rank heard from explains the wait.
//
// Losing the store never harms the job: while calls fail, merge() judges
// this node's ranks, the other nodes' silent (at once after a quiet round,
// once their news is older than the bound after an alarm's), and the view
// says so once in the log and in status() (silent_nodes names them all);
// when the store answers again it says that once too.
//
// Threads: offer(), merge(), request_dumps(), status() and the fingerprint
// and slow-rank calls from the asio thread; the store only from the view's
// thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/analysis/collective_check.h"
#include "supervisor/analysis/job_fingerprints.h"
#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/dump_requests.h"
#include "supervisor/coordination/fingerprint_exchange.h"
#include "supervisor/coordination/key_trust.h"
#include "supervisor/coordination/leader_election.h"
#include "supervisor/coordination/node_alarms.h"
#include "supervisor/coordination/node_progress.h"
#include "supervisor/coordination/progress_exchange.h"
#include "supervisor/coordination/slow_summary_exchange.h"

namespace xpu_timer::supervisor {

// A node of the job this one has not heard from lately: its supervisor
// died, a partition, or the store is lost.
struct SilentNode {
  int node = -1;
  std::string host;
  // Since this node last heard from it (its latest stamp; in quiet times,
  // or while the store answers, the last round that found its owner key).
  double silent_s = 0;
  bool keys_gone = false;  // its keys left the store (its lease ended)
};

struct JobViewStatus {
  std::string url;
  std::string job_id;
  bool connected = false;  // the last round of store calls succeeded
  bool alarm = false;      // some node wants the job's view: documents exchanged every period
  std::string last_error;  // of the last failed call ("" if none)
  std::vector<int> nodes;  // the other nodes seen in the last good read
  uint64_t rounds = 0;     // publish rounds done (successful or not)
  uint64_t failures = 0;   // rounds that failed
  // Documents the store sent (this node's own included; none in a steady
  // hang), and reads that took every document (the first one, then only
  // after the store lost its data or this view missed a change).
  uint64_t docs_read = 0;
  uint64_t full_reads = 0;
  // Whether this node leads the exchange (reads every stamp and puts the
  // digest: progress_exchange.h); the exchanges that read every stamp, and
  // those that took the leader's digest instead.
  bool leading = false;
  uint64_t stamp_reads = 0;
  uint64_t digest_reads = 0;
  // The nodes whose collective fingerprints this one compares with its own
  // (job_fingerprints.h), as of the last comparison.
  std::vector<int> fingerprint_peers;
  // The nodes not heard from for longer than the freshness bound (while an
  // alarm stands: no news; otherwise: their owner key gone), or, while the
  // store does not answer, every node heard from before.
  std::vector<SilentNode> silent_nodes;
};

// The `coordinator` object of GET /hang: the view's status, and the
// job-wide collective comparison (the nodes compared with, per communicator
// the highest collective found in agreement, the communicators no longer
// compared because their sequences diverged).
nlohmann::json coordinator_json(const JobViewStatus& s, const nlohmann::json& compared_through,
                                const nlohmann::json& unaligned);

class JobView {
 public:
  // (reason, node that asked), on the view's thread: post it to your own.
  using RequestHandler = std::function<void(const std::string& reason, int from_node)>;
  // A job-wide collective mismatch some node published (job_fingerprints.h),
  // each once, on the view's thread: post it to your own.
  using MismatchHandler = FingerprintExchange::MismatchHandler;

  JobView(std::unique_ptr<CoordinationStore> store, std::string url, std::string job_id,
          int publish_ms, RequestHandler on_request, MismatchHandler on_mismatch = nullptr);
  ~JobView();  // stops the thread (bounded by one store call)
  JobView(const JobView&) = delete;
  JobView& operator=(const JobView&) = delete;

  static constexpr double kQuietRefreshS = ProgressExchange::kQuietRefreshS;
  // A merged snapshot counts as of its own instant (node_progress.h): its
  // age delays what its ranks show by as much, so one older than
  // max(kFreshS, kFreshFraction x the timeout) is merged without news.
  static constexpr double kFreshS = 10;
  static constexpr double kFreshFraction = 0.1;

  // This node's latest snapshot, its node (group rank; -1 while no rank
  // registered: nothing is published), the job's world size, whether it
  // wants the job's view now (wants_job_view), and the ranks per node
  // (LOCAL_WORLD_SIZE: with the world size, the job's node count).
  void offer(const Snapshot& local, int node, int world_size, const std::string& host, bool alarm,
             int local_world_size = 1);
  // `local` joined with the other nodes' ranks (merge_job_snapshot), or
  // `local` alone while the store is not answering. A node's snapshot is
  // merged while its stamp is at most max(kFreshS, kFreshFraction x the hang
  // timeout) old; while an alarm stands, the ranks of a node whose news is
  // older (or whose supervisor is gone) are merged without news: nothing in
  // flight, heartbeats as last heard.
  Snapshot merge(const Snapshot& local, double timeout_s = 0) const;
  // Asks every other node to dump (reason: "hang", ...); published by the
  // next round.
  void request_dumps(const std::string& reason);
  JobViewStatus status() const;

  // The job-wide collective comparison (job_fingerprints.h). This node's
  // window (what it issued since the last) and its communicators: published
  // by the next round (if not empty; the last kFingerprintWindowsKept stay
  // in the store), which then reads the windows of this node's peers
  // (fingerprint_peers over the other nodes' documents).
  void offer_fingerprints(NodeFingerprints window, std::set<uint64_t> comms);
  // The peers' windows read since the last call.
  std::vector<NodeFingerprints> take_peer_fingerprints();
  // This node and a peer disagree on (comm, seq): the next round reads every
  // node's window, completes the mismatch with them and `mine`, and
  // publishes it under <root>/alarms/mismatch-<comm>-<seq> for every node's
  // MismatchHandler (this one's too). Removed from the store after
  // kMismatchKeepS.
  void publish_mismatch(uint64_t comm_hash, uint64_t seq, NodeFingerprints mine);
  static constexpr double kMismatchKeepS = FingerprintExchange::kMismatchKeepS;
  static constexpr size_t kFingerprintWindowsKept = FingerprintExchange::kWindowsKept;

  // Slow ranks across nodes (analysis/slow_summary.h): this node's window
  // summary, put as <root>/slow/<node> by the next slow round (every
  // kSlowPeriodS), which then reads every node's; the texts of the nodes'
  // summaries that count (by node, this node's included; parsed by the
  // caller, which knows the world), as of the last slow round.
  void offer_slow_summary(std::string text);
  std::map<int, std::string> slow_summaries() const;
  static constexpr double kSlowPeriodS = SlowSummaryExchange::kPeriodS;
  // A request from an owner whose alarm this view has not read yet is
  // looked at again for this long (its alarm is put just before it).
  static constexpr double kRequestWaitS = DumpRequests::kRequestWaitS;

 private:
  void run();
  bool round();  // one publish-and-read; false when a store call failed
  // After a good round, under mu_: who was heard from (`others`: the
  // exchange's nodes, null without one), and which known nodes left.
  void heard(bool alarm, double now_s, int me, const std::vector<NodeProgress>* others);
  // Wakes the thread for a request or mismatch to put now.
  void wake();
  bool stopping() const { return stop_.load(); }

  std::unique_ptr<CoordinationStore> store_;
  const std::string url_;
  const std::string job_id_;
  const int publish_ms_;
  RequestHandler on_request_;
  // The destructor asked the thread to end: a round stops between calls, so
  // the supervisor's exit waits for one store call at most.
  std::atomic<bool> stop_{false};

  // The parts (the view's thread, but for their calls named in their
  // headers).
  KeyTrust trust_;
  NodeAlarms alarms_;
  LeaderElection leader_;
  ProgressExchange progress_;
  DumpRequests dumps_;
  FingerprintExchange fingerprints_;
  SlowSummaryExchange slow_;
  // When the lease was last refreshed (monotonic ns; 0: never): a third of
  // its TTL apart, not every round (CoordinationStore::keep_alive()).
  uint64_t kept_alive_ns_ = 0;

  // What the asio thread and the view's thread share.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::optional<NodeProgress> mine_;
  bool mine_alarm_ = false;
  int local_world_size_ = 1;
  // Every other node's latest snapshot, as of the last exchange (a node whose
  // keys are gone is not): merged without news while an alarm stands and
  // its news is late (merge()).
  std::map<int, NodeProgress> last_known_;
  // Nodes of last_known_ whose keys left the store since: merged silent.
  // Until they are heard from again.
  std::map<int, NodeProgress> gone_;
  // When each other node was last heard from (unix s): its latest stamp,
  // and while no alarm stands a round that found its owner key.
  std::map<int, double> heard_unix_s_;
  // The freshness bound of the last merge() (a tenth of the hang timeout,
  // at least kFreshS).
  mutable double fresh_s_ = kFreshS;
  JobViewStatus status_;

  std::thread thread_;
};

}  // namespace xpu_timer::supervisor
