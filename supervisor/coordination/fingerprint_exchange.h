// The job view's fingerprint part (job_view.h): moves the job-wide
// collective comparison (analysis/job_fingerprints.h) through the store.
// This node's window of what it issued is put as
// <root>/fingerprints/<node>/<unix ms> (its last kWindowsKept stay), then
// the windows of its peers (fingerprint_peers: one node per communicator)
// are read for the collective monitor. A disagreement with a peer makes the
// next round read every node's window, complete the mismatch, and put it as
// <root>/alarms/mismatch-<comm>-<seq> for every node (removed after
// kMismatchKeepS); every node hands each such mismatch on once. A window or
// mismatch counts only under its node's owner lease (KeyTrust).
//
// Threads: offer(), take_peer_windows(), publish_mismatch(), pending() and
// peers() from any thread; the rest on the view's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "supervisor/analysis/collective_check.h"
#include "supervisor/analysis/job_fingerprints.h"
#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/key_trust.h"
#include "supervisor/coordination/node_progress.h"

namespace xpu_timer::supervisor {

class FingerprintExchange {
 public:
  static constexpr double kMismatchKeepS = 60;
  static constexpr size_t kWindowsKept = 4;
  // A job-wide mismatch some node published, and that node; on the view's
  // thread.
  using MismatchHandler = std::function<void(Mismatch m, int from_node)>;

  // `store` and `trust` must outlive this; `stop` says the view is ending
  // (a round then stops between store calls).
  FingerprintExchange(CoordinationStore* store, KeyTrust* trust, const std::string& root,
                      const std::atomic<bool>* stop, MismatchHandler on_mismatch);

  // This node's window and its communicators, put by the next round.
  void offer(NodeFingerprints window, std::set<uint64_t> comms);
  // The peers' windows read since the last call.
  std::vector<NodeFingerprints> take_peer_windows();
  // This node and a peer disagree on (comm, seq), `mine` being this node's
  // window: published by the next round.
  void publish_mismatch(uint64_t comm_hash, uint64_t seq, NodeFingerprints mine);
  // Whether a mismatch waits to be published.
  bool pending() const;
  // The nodes compared with, as of the last round that offered a window.
  std::vector<int> peers() const;

  // The mismatch keys read under <root>/alarms/ (NodeAlarms::read): each
  // new one that counts goes to the handler.
  void note_mismatches(const std::vector<KeyValue>& kvs);
  // Puts the offered window, reads the peers' (`others`: the other nodes'
  // snapshots, for their communicators), removes this node's old
  // mismatches and publishes the pending ones; false when a store call
  // failed.
  bool round(int my_node, const std::vector<NodeProgress>& others);

 private:
  struct PendingMismatch {
    uint64_t comm_hash = 0;
    uint64_t seq = 0;
    NodeFingerprints mine;
  };
  bool stopping() const { return stop_->load(); }
  // <root>/fingerprints/<node>/<unix ms>: one window of the node's.
  std::string window_key(int node, double unix_s) const;
  // The windows under `prefix` that count, other than `my_node`'s.
  bool read_windows(const std::string& prefix, int my_node, std::vector<NodeFingerprints>* out);
  void requeue(const std::vector<PendingMismatch>& pending);

  CoordinationStore* const store_;
  KeyTrust* const trust_;
  const std::string dir_;     // <root>/fingerprints/
  const std::string alarms_;  // <root>/alarms/
  const std::atomic<bool>* const stop_;
  const MismatchHandler on_mismatch_;

  mutable std::mutex mu_;  // guards the next five
  std::optional<NodeFingerprints> offer_;
  std::set<uint64_t> comms_;
  std::vector<NodeFingerprints> peer_windows_;
  std::vector<PendingMismatch> pending_;
  std::vector<int> peers_;
  // The view's thread only: the keys of this node's windows in the store
  // (oldest first), the mismatches seen, and those this node put (unix
  // time, key).
  std::deque<std::string> keys_put_;
  std::set<std::string> seen_mismatches_;
  std::vector<std::pair<double, std::string>> mismatches_put_;
};

}  // namespace xpu_timer::supervisor
