// Collective consistency: ranks that disagree on a collective. Pure logic,
// no I/O: the poll loop (asio thread) feeds it the new records of every
// rank's flight recorder and takes the mismatches it finds.
//
// NCCL matches collectives by their order on a communicator, not by what
// they are: when one rank all-gathers where the others all-reduce, or
// reduces twice the elements, the job runs on and trains on garbage. Each
// rank's records carry the communicator's identity (comm_hash, the same on
// every member, different for two communicators over the same ranks) and
// the per-communicator sequence number, so the records of the same
// collective on different ranks share (comm_hash, seq). Their fingerprints
// (operation, dtype, element count as passed to NCCL, root, reduction op)
// must agree; the first disagreement is reported once.
//
// Not compared (docs/architecture.md "Collective consistency"): members of
// an ncclGroupStart/End block (recorded as one group record whose
// fingerprint is only its size) and point-to-point operations, which do
// not have to agree across ranks. A rank that issues a different number of
// them than the others on a communicator makes the sequence numbers of
// later collectives no longer correspond: the checker notices (a plain
// collective on one rank meets a group or a send/receive on another at the
// same number) and stops checking that communicator rather than report
// false mismatches.
//
// The records carry no communicator names: the poll loop hands the checker
// the names the ranks' status pages give (note_comm_names) before check(),
// and a mismatch names its communicator when one is known.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/recorder_ring.h"
#include "supervisor/analysis/rank_sample.h"

namespace xpu_timer::supervisor {

// What must agree across the ranks of one collective.
struct Fingerprint {
  uint16_t name = 0;   // proto::OpName
  uint8_t dtype = 0;   // proto::DType
  uint8_t red_op = 0;  // ncclRedOp_t + 1, 0 = none
  int32_t root = -1;   // Broadcast / Reduce; -1 otherwise
  uint64_t count =
      0;  // elements as passed to NCCL (AllGather: send count, ReduceScatter: receive count)
  uint32_t group_size = 1;  // > 1 or a group record: not compared field by field
  bool p2p_or_group = false;
  bool operator==(const Fingerprint& o) const {
    return name == o.name && dtype == o.dtype && red_op == o.red_op && root == o.root &&
           count == o.count;
  }
};
Fingerprint fingerprint_of(const recorder::RecordData& d);
// "AllReduce bf16 x 524288 sum", "Broadcast bf16 x 524288 root 1".
std::string fingerprint_text(const Fingerprint& f);

struct Mismatch {
  uint64_t comm_hash = 0;
  std::string comm_name;  // "" = unknown
  uint64_t seq = 0;
  uint32_t nranks = 0;  // communicator size
  // What differs first, in this order: op, dtype, count, root, red_op.
  std::string kind;
  // Ranks grouped by the fingerprint they issued; the largest group first.
  std::vector<std::pair<Fingerprint, std::vector<int>>> groups;
  // Ranks outside the one strictly largest group (empty when no group is
  // larger than the others, e.g. two ranks: which one is wrong is unknown).
  std::vector<int> odd_ranks;
  std::vector<int> ranks;  // every rank seen in this collective, sorted
  // A job of several nodes: the node of each rank (rank -> node); empty for
  // a mismatch among one node's ranks.
  std::map<int, int> nodes;
  uint64_t last_launch_ns = 0;  // CLOCK_MONOTONIC: the latest host call among the records
  uint64_t detected_ns = 0;     // CLOCK_MONOTONIC
  double detected_at_unix_s = 0;
  std::string summary;  // one sentence
  // rank -> the index of the Python line that issued its collective in its
  // flight recorder's call sites (inject/call_sites.h), for the ranks whose
  // record had one; the poll loop turns them into `issued_at`.
  std::map<int, int> site_ids;
  // rank -> that line (this node's ranks).
  std::map<int, CodeFrame> issued_at;
};

class CollectiveChecker {
 public:
  // One record of `rank` (any kind; only collectives are kept), with its
  // call site's index (recorder::call_site_of).
  void add(int rank, const recorder::RecordData& d);
  // Compares what arrived since the last call; returns new mismatches (each
  // (comm, seq) at most once) and forgets collectives every member reported
  // or that waited longer than the retention.
  std::vector<Mismatch> check(uint64_t now_ns, double now_unix_s);
  // Learns the names the ranks' pages give their communicators (a
  // communicator's name never changes; hashes local to one rank are skipped).
  void note_comm_names(const Snapshot& snap);
  // "" when no page named it.
  std::string comm_name(uint64_t comm_hash) const;

  // A job of several nodes (job_fingerprints.h): a disagreement on a
  // communicator with members on other nodes waits `ns` (instead of
  // kSettleNs) for the job-wide comparison, which sees every member and
  // reports it; mark_reported() then keeps it from being reported here too.
  // Without an answer from the other nodes it is reported with the members
  // of this node after `ns`. note_cross_node names the communicators with
  // members elsewhere (FingerprintLog::comms(): fewer members on this node
  // than their size).
  void set_cross_node_settle(uint64_t ns) { cross_node_settle_ns_ = ns; }
  void note_cross_node(const std::set<uint64_t>& comms);
  void mark_reported(uint64_t comm_hash, uint64_t seq);

  uint64_t compared() const { return compared_; }  // collectives checked on >= 2 ranks
  size_t pending() const { return entries_.size(); }
  // Communicators no longer checked (sequence numbers diverged).
  const std::set<uint64_t>& unaligned_comms() const { return unaligned_; }

  // Bounds: a collective some member never reports (a rank hung before it,
  // or its records were overwritten before we read them) is kept this long.
  static constexpr uint64_t kRetentionNs = 120ull * 1000 * 1000 * 1000;
  static constexpr size_t kMaxEntries = 1 << 16;
  // A disagreement among some members is reported once every member of the
  // communicator reported, or this long after it was first seen: a member
  // whose record was not read yet (its ring is read at the next poll) must
  // not make the others look like the odd ones. Two poll intervals and a
  // half at the default --poll-ms: well inside the 2 s a verdict may take.
  static constexpr uint64_t kSettleNs = 1250ull * 1000 * 1000;
  static constexpr size_t kMaxNames = 1 << 12;

 private:
  struct Entry {
    uint32_t nranks = 0;
    uint64_t first_seen_ns = 0;  // the first check() that saw it (0: none yet)
    uint64_t last_launch_ns = 0;
    std::map<int, Fingerprint> by_rank;
    std::map<int, int> site_by_rank;  // the ranks whose record named its call site
    bool dirty = false;
    bool reported = false;
    uint64_t disagreed_ns = 0;  // when check() first saw two fingerprints; 0: not yet
  };
  using Key = std::pair<uint64_t, uint64_t>;  // (comm_hash, seq)
  std::map<Key, Entry> entries_;
  std::deque<Key> order_;  // oldest first
  std::set<uint64_t> unaligned_;
  std::map<uint64_t, std::string> names_;  // comm_hash -> name, at most kMaxNames
  std::set<uint64_t> cross_node_;          // communicators with members on other nodes
  uint64_t cross_node_settle_ns_ = kSettleNs;
  uint64_t compared_ = 0;
};

// The mismatch of collective `seq` on `comm_hash` among the fingerprints of
// `by_rank`: the ranks grouped by fingerprint (largest group first), what
// differs first and the odd ones out; no name, times or summary. The groups
// are one when every rank agrees.
Mismatch mismatch_of(uint64_t comm_hash, uint64_t seq, uint32_t nranks,
                     const std::map<int, Fingerprint>& by_rank);

// "ranks 0,2,3 issued AllReduce bf16 x 524288 sum and rank 1 AllGather bf16
// x 262144 as collective #12 on comm 1a2b3c4d5e6f7a8b (4 ranks)"; with a
// name: "... on comm 1a2b3c4d5e6f7a8b (tp_group, 4 ranks)".
std::string mismatch_sentence(const Mismatch& m);
// The mismatch as GET /hang shows it (docs/usage.md).
nlohmann::json mismatch_json(const Mismatch& m);
// Its `issued_at` object: rank -> [{function, file, line}].
nlohmann::json issued_at_json(const Mismatch& m);

}  // namespace xpu_timer::supervisor
