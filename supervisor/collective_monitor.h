// The collective check as the supervisor runs it: takes each rank's
// flight-recorder records (common/recorder_ring.h) when the ring feed
// (ranks/ring_feed.h) first reads them, feeds them to the checker
// (analysis/collective_check.h), and in a job of several nodes
// exchanges the fingerprints of collectives that span nodes through the job
// view (analysis/job_fingerprints.h, coordination/job_view.h). A mismatch
// found here or published by another node is handed to `report` once per
// collective; what was reported is kept for GET /hang, /metrics and
// mismatch.json.
//
// Threads: every method but published() is called on the asio thread;
// published() from any thread (HTTP).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/code_frame.h"
#include "supervisor/analysis/collective_check.h"
#include "supervisor/analysis/job_fingerprints.h"
#include "supervisor/incidents/mismatch_incident.h"
#include "supervisor/ranks/rank_registry.h"
#include "supervisor/ranks/ring_feed.h"

namespace xpu_timer::supervisor {

class JobView;

// What GET /hang and /metrics show of the collective check.
struct CollectiveStatus {
  nlohmann::json mismatches = nlohmann::json::array();  // the mismatch.json entries kept
  uint64_t mismatch_total = 0;
  uint64_t collectives_checked = 0;
  std::set<int> mismatched_ranks;  // the ranks blamed so far
  // Where each odd rank of this node was when the stacks of its latest
  // mismatch were taken (xpu_timer_mismatch_culprit_info).
  std::map<int, std::vector<CodeFrame>> odd_places;
  // Jobs of several nodes: per communicator the highest collective found in
  // agreement with the peer nodes, and the communicators no longer compared.
  nlohmann::json compared_through = nlohmann::json::object();
  nlohmann::json unaligned = nlohmann::json::array();
};

class CollectiveMonitor : public RingConsumer, public MismatchLedger {
 public:
  // `job_view`: the other nodes (nullptr: this node alone); must outlive this.
  explicit CollectiveMonitor(JobView* job_view);

  // The records a read of a rank's ring found for the first time (to the
  // checker and the fingerprints) and its call sites.
  void on_ring_read(const RingRead& read) override;
  // After a read of the rings: finds the mismatches their records complete
  // (take_reported() hands them out). `read_pages` reads the pages again (for the names of
  // communicators created since the last poll).
  void check(const std::function<Snapshot()>& read_pages);
  // After the snapshot of this poll: remembers communicator names and, in a
  // job of several nodes, offers and compares fingerprints (`node`: this
  // node's group rank).
  void note_snapshot(const Snapshot& snap, int node);
  // Sets `issued_at` of this node's ranks whose oldest operation in flight
  // is a collective their ring named the Python line of (a recent one).
  void annotate_issued(Snapshot* snap) const;
  // A mismatch another node published for the whole job (to take_reported()
  // unless this node reported it already).
  void on_job_mismatch(Mismatch m, int from_node);
  // The mismatches found since the last call, each collective once, in the
  // order found: for MismatchIncident::on_mismatch.
  std::vector<Mismatch> take_reported();
  // MismatchLedger: keeps what was reported of `m` (its mismatch.json entry,
  // with the dump folders) and returns every kept entry, for mismatch.json.
  nlohmann::json remember(const Mismatch& m, nlohmann::json entry) override;
  // Adds the places of `m`'s odd ranks to its kept entry (`where`, keyed by
  // rank) and returns every kept entry, for mismatch.json.
  nlohmann::json locate(const Mismatch& m, const RankPlaces& places) override;

  CollectiveStatus published() const;

 private:
  void exchange_fingerprints(int node);
  // Call site `id` of the ring of `rank` (of process `pid`; -1: any), nullptr if unknown.
  const CodeFrame* site_of(int rank, pid_t pid, int id) const;
  void report_once(Mismatch m);

  // A rank's ring as far as the check needs it.
  struct RankSites {
    pid_t pid = 0;
    std::vector<CodeFrame> sites;  // the ring's call sites as last read
    // The call sites of its latest collectives: (comm, seq) -> site, at
    // most kRecentSites, the oldest forgotten first.
    std::map<std::pair<uint64_t, uint64_t>, int> recent_sites;
    std::deque<std::pair<uint64_t, uint64_t>> recent_order;
  };
  static constexpr size_t kRecentSites = 512;
  JobView* const job_view_;
  // Asio thread only.
  std::vector<Mismatch> reported_since_;  // for take_reported()
  CollectiveChecker checker_;
  std::map<int, RankSites> sites_;
  // Every collective reported (comm, seq), from this node or job-wide.
  std::set<std::pair<uint64_t, uint64_t>> reported_;
  FingerprintLog fingerprints_;
  std::map<uint64_t, uint64_t> job_reported_after_;    // comm -> highest seq reported
  std::map<uint64_t, uint64_t> job_compared_through_;  // comm -> highest seq compared
  std::set<uint64_t> job_unaligned_;
  uint64_t fingerprints_offered_ns_ = 0;
  std::map<uint64_t, uint64_t> fingerprints_published_;  // comm -> highest seq offered
  // Published (mutex_).
  static constexpr size_t kMaxMismatchesKept = 64;
  mutable std::mutex mutex_;
  CollectiveStatus status_;
  std::vector<nlohmann::json> entries_;  // the most recent kMaxMismatchesKept
};

}  // namespace xpu_timer::supervisor
