// The job beyond this node: the supervisor's link to the coordination store
// (coordination_store.h) when the job spans several nodes (--coordinator).
//
// A thread of its own (store calls block up to their timeout; the asio
// thread never waits for the store) does, every publish period:
//   - put or remove <root>/alarms/<node>: whether this node wants the job's
//     view now (wants_job_view: a rank past half the hang timeout, its ranks
//     still for half the stall time, a verdict standing), and read
//     <root>/alarms/ (a few bytes);
//   - while any node raises an alarm (and every kQuietRefreshS otherwise),
//     exchange the nodes' latest snapshots (node_progress.h) for merge():
//     put <root>/nodes/<node>, this node's document, only when it changed
//     but for its times, and <root>/stamps/<node>, its times (a few hundred
//     bytes); read every stamp, and of <root>/nodes/ only the documents
//     changed since the last read (the store's min_mod_revision). A healthy
//     job thus costs the store a small read per node per period, and a
//     steady hang (where only times move) each node's stamp out and the
//     others' stamps in, not every node's document (bench/results/,
//     "job-scale");
//   - keys are put under the store client's lease, so a dead supervisor's
//     entries expire;
//   - put the dump requests queued by request_dumps() as
//     <root>/dumps/<unix_ms>-<node>, and read <root>/dumps/: a request from
//     another node that this node has not seen is handed to `on_request`
//     (once; requests older than this view are only marked seen).
// <root> is /xpu_timer/<job id>.
//
// Only what the job can vouch for counts (store_trust.h): this node claims
// <root>/owners/<node> under its lease (create-if-absent), and reads the
// owners every round; a key of node N counts only under N's owner lease, for
// N within the job's node count, and a document or stamp only when its
// ranks and clock pass store_trust's checks. What is refused is said once
// per key. A node whose keys are gone (deleted, its lease expired, etcd
// restarted empty) leaves the merge at the next exchange. Dump requests of
// other nodes are obeyed only from an owner whose alarm stands, at most one
// every DumpRequestGate::kMinIntervalS.
//
// The view keeps the documents it read, by node, and applies to each the
// node's latest stamp. A stamp that names a document the view lacks (the
// store lost or missed a change: its revision went back, a read raced a
// put) keeps that node's previous snapshot and makes the next read take
// every document again. merge() joins only snapshots whose stamp is at most
// kFreshS old: an older one would show its ranks' operations in flight for
// as long as it is old (while an alarm stands, its ranks stay without news);
// a node whose stamp is gone is not merged at all.
//
// Losing the store never harms the job: while calls fail, merge() returns
// this node's snapshot alone (today's single-node behaviour) and the view
// says so once in the log and in status(); when the store answers again it
// says that once too.
//
// Threads: offer(), merge(), request_dumps() and status() from the asio
// thread; the store only from the view's thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/analysis/collective_check.h"
#include "supervisor/coordination/coordination_store.h"
#include "supervisor/analysis/job_fingerprints.h"
#include "supervisor/coordination/node_progress.h"
#include "supervisor/coordination/store_trust.h"

namespace xpu_timer::supervisor {

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
  // The nodes whose collective fingerprints this one compares with its own
  // (job_fingerprints.h), as of the last comparison.
  std::vector<int> fingerprint_peers;
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
  using MismatchHandler = std::function<void(Mismatch m, int from_node)>;

  JobView(std::unique_ptr<CoordinationStore> store, std::string url, std::string job_id,
          int publish_ms, RequestHandler on_request, MismatchHandler on_mismatch = nullptr);
  ~JobView();  // stops the thread (bounded by one store call)
  JobView(const JobView&) = delete;
  JobView& operator=(const JobView&) = delete;

  static constexpr double kQuietRefreshS = 120;
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
  static constexpr double kMismatchKeepS = 60;
  static constexpr size_t kFingerprintWindowsKept = 4;

  // Slow ranks across nodes (analysis/slow_summary.h): this node's window
  // summary, put as <root>/slow/<node> by the next slow round (every
  // kSlowPeriodS), which then reads every node's; the texts of the nodes'
  // summaries that count (by node, this node's included; parsed by the
  // caller, which knows the world), as of the last slow round.
  void offer_slow_summary(std::string text);
  std::map<int, std::string> slow_summaries() const;
  static constexpr double kSlowPeriodS = 5;
  // A request from an owner whose alarm this view has not read yet is
  // looked at again for this long (its alarm is put just before it).
  static constexpr double kRequestWaitS = 10;

 private:
  void run();
  bool round();  // one publish-and-read; false when a store call failed
  // Publishes this node's document (if it changed) and stamp.
  bool publish(const NodeProgress& mine);
  // Reads the stamps and the changed documents into `others` (the other
  // nodes' snapshots, stamps applied); false when a store call failed.
  bool read_others(const std::optional<NodeProgress>& mine, std::vector<NodeProgress>* others);
  // The fingerprint part of a round (job_view_collectives.cc); false when a
  // store call failed.
  bool fingerprint_round(int my_node);
  // The slow-rank part of a round (job_view_slow.cc); false when a store
  // call failed.
  bool slow_round(int my_node);
  // The keys under <root>/alarms/: hands new mismatches to on_mismatch_;
  // whether a node's alarm stands (alarmed_ holds which).
  bool note_alarm_keys(const std::vector<KeyValue>& kvs);
  // Claims this node's owner key if it must, and reads every owner into
  // owners_; false when a store call failed.
  bool read_owners(const NodeProgress& mine);
  // Whether `kv` (a key of `node`) was written by the node's owner; says
  // once per key why not.
  bool trusted(const KeyValue& kv, int node);
  // The dump requests under <root>/dumps/ to hand on (reason, node).
  std::vector<std::pair<std::string, int>> admit_requests(const std::vector<KeyValue>& kvs);
  // <root>/fingerprints/<node>/<unix ms>: one window of the node's.
  std::string fingerprints_key(int node, double unix_s) const;
  // Says once per key that a value read from the store is not ours to use.
  void ignore_key(const KeyValue& kv, const std::string& why);
  // The destructor asked the thread to end: a round stops between calls, so
  // the supervisor's exit waits for one store call at most.
  bool stopping() const;

  std::unique_ptr<CoordinationStore> store_;
  const std::string url_;
  const std::string job_id_;
  const std::string root_;
  const int publish_ms_;
  RequestHandler on_request_;
  MismatchHandler on_mismatch_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::optional<NodeProgress> mine_;
  bool mine_alarm_ = false;
  int local_world_size_ = 1;
  std::vector<NodeProgress> others_;
  // Every other node's latest snapshot, as of the last exchange (a node whose
  // keys are gone is not): merged without news while an alarm stands and
  // its news is late (merge()).
  std::map<int, NodeProgress> last_known_;
  std::vector<std::string> requests_;
  JobViewStatus status_;
  struct PendingMismatch {
    uint64_t comm_hash = 0;
    uint64_t seq = 0;
    NodeFingerprints mine;
  };
  std::optional<NodeFingerprints> fp_offer_;
  std::set<uint64_t> fp_comms_;
  std::vector<NodeFingerprints> fp_peer_docs_;
  std::vector<PendingMismatch> fp_pending_;
  std::optional<std::string> slow_offer_;
  std::map<int, std::string> slow_docs_;

  // The view's thread only.
  std::set<std::string> seen_requests_;
  bool first_read_ = true;
  double slow_round_s_ = -1e9;  // unix time of the last slow round
  bool alarm_put_ = false;          // our alarm key is in the store
  double last_exchange_s_ = -1e9;   // unix time of the last documents exchange
  std::set<std::string> bad_keys_;  // warned about once
  // Who vouches for what (store_trust.h): the job's size as this node's
  // ranks say, the owner lease of each node, the nodes whose alarm stands.
  JobShape job_;
  std::map<int, int64_t> owners_;
  bool owners_reread_ = false;  // owners_ was read again this round (trusted())
  bool claimed_ = false;  // this node's owner key was created (or is being re-claimed)
  bool owner_lost_said_ = false;
  std::set<int> alarmed_;
  DumpRequestGate dump_gate_;
  // The documents exchange (the view's thread only): what this node put,
  // and what it read of the others.
  uint64_t put_doc_ = 0;                   // id of our document in the store (0: none)
  std::map<int, NodeProgress> docs_;       // the documents read, by node (their ids in .doc)
  std::map<int, int64_t> doc_leases_;      // the lease each of docs_ was written under
  int64_t docs_revision_ = 0;              // the store's revision at the last read of them
  bool read_all_docs_ = true;              // the next read takes every document
  std::set<std::string> unreadable_docs_;  // keys of documents that did not parse
  // Documents that parsed but were not written under their node's owner
  // lease as this node knew the owners when it read them (a forger's, or a
  // node's own read between its owner key and an earlier read of the
  // owners): kept with their lease, and taken once that lease owns the node.
  // Nothing else reads an unchanged document again.
  std::map<int, std::pair<NodeProgress, int64_t>> untrusted_docs_;
  // The fingerprint exchange (the view's thread only): the keys of this
  // node's windows in the store (oldest first), the mismatches seen, and
  // those this node put (unix time, key).
  std::deque<std::string> fp_keys_put_;
  std::set<std::string> seen_mismatches_;
  std::vector<std::pair<double, std::string>> mismatches_put_;

  std::thread thread_;
};

}  // namespace xpu_timer::supervisor
