// Collective consistency across the nodes of a job (docs/architecture.md
// "Jobs of several nodes"). Pure: no I/O, no threads; job_view.h moves the
// texts through the store, supervisor.cc feeds the records.
//
// One node's checker (collective_check.h) sees only its own members of a
// communicator that spans nodes. Each node therefore keeps, per such
// communicator, the fingerprints its members issued for the latest
// collectives (FingerprintLog) and publishes them compactly: runs of
// consecutive sequence numbers with one fingerprint for every member of the
// node, plus the members that differ (NodeFingerprints). A node compares its
// own log with the published window of ONE other node per communicator: the
// next member node in node order (fingerprint_peers), so that the nodes of a
// communicator form a ring. If every node agrees with its successor on every
// collective their windows share, all agree (equality is transitive), and
// the job costs the store O(nodes) reads instead of O(nodes²). The first
// collective on which two nodes' ranks disagree is then completed with every
// node's window (mismatch_from_windows: one read of every document, once
// per mismatch) and published for every node to report.
//
// Not compared, as on one node: members of ncclGroupStart/End blocks and
// point-to-point operations (their fingerprints need not agree). A plain
// collective on one node against such an operation on another at the same
// number means the sequences no longer correspond: that communicator is no
// longer compared.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/recorder_ring.h"
#include "supervisor/analysis/collective_check.h"
#include "supervisor/analysis/rank_sample.h"

namespace xpu_timer::supervisor {

// What one node publishes about one communicator with members elsewhere.
struct CommWindow {
  uint64_t comm_hash = 0;
  uint32_t nranks = 0;
  std::vector<int> members;  // this node's ranks in it (global ranks), sorted
  struct Run {
    uint64_t first_seq = 0;
    uint64_t count = 0;  // consecutive numbers from first_seq
    Fingerprint fp;      // of every member, except the exceptions below
  };
  std::vector<Run> runs;  // ascending, not overlapping; numbers not covered are unknown
  struct Exception {
    uint64_t seq = 0;
    int rank = -1;
    Fingerprint fp;
  };
  std::vector<Exception> exceptions;  // members that differ from their run
  // Every rank's fingerprint of `seq` (false: not in this window).
  bool at(uint64_t seq, std::map<int, Fingerprint>* by_rank) const;
};

struct NodeFingerprints {
  int node = -1;
  std::vector<CommWindow> comms;
  // The highest number per communicator in it (those without runs left out).
  std::map<uint64_t, uint64_t> last_seqs() const;
};

std::string node_fingerprints_text(const NodeFingerprints& f);
// False with one line for anything that is not such a document.
bool parse_node_fingerprints(const std::string& text, NodeFingerprints* out, std::string* error);

// This node's recent fingerprints of the communicators with members on other
// nodes. Fed from the asio thread (the same records as the checker).
class FingerprintLog {
 public:
  // Which of this node's ranks are in which communicator, from their pages.
  // Only communicators with fewer members here than their size are kept;
  // records of one the pages do not name yet are kept until they do.
  void note_members(const Snapshot& local);
  void add(int rank, const recorder::RecordData& d);
  // The communicators' windows: for each, the latest numbers (at most
  // kPublishSeqs) that every member here has issued, above `after[comm]`
  // (those published already: a node publishes what is new each period).
  // Runs of a fingerprint shared by every member; numbers some member has
  // not issued yet (or whose record was lost) are left out.
  NodeFingerprints window(int node, const std::map<uint64_t, uint64_t>& after = {}) const;
  // The fingerprints of (comm, seq) of this node's members (empty: unknown).
  std::map<int, Fingerprint> local_at(uint64_t comm_hash, uint64_t seq) const;
  // The communicators kept (for fingerprint_peers).
  std::set<uint64_t> comms() const;

  static constexpr uint64_t kKeepSeqs = 8192;     // per communicator, in memory
  static constexpr uint64_t kPublishSeqs = 2048;  // per communicator, published
  static constexpr size_t kMaxComms = 64;
  static constexpr size_t kMaxLocalComms = 4096;
  static constexpr int kMaxUnknownNotes = 100;  // polls a communicator may stay unnamed

 private:
  struct Comm {
    bool known = false;  // named by a page (members and size known)
    int unknown_notes = 0;
    uint32_t nranks = 0;
    std::set<int> members;
    std::map<uint64_t, std::map<int, Fingerprint>> by_seq;  // the latest kKeepSeqs numbers
  };
  std::map<uint64_t, Comm> comms_;
  std::set<uint64_t> local_only_;  // every member on this node: not kept
};

// For each communicator of `mine` (this node's), the next node after
// `my_node` (cyclically, in node order) among the nodes with members in it,
// as the other nodes' progress documents list their ranks' communicators
// (`comms_of_node`: node -> communicators). The set of nodes to read.
std::set<int> fingerprint_peers(int my_node, const std::set<uint64_t>& mine,
                                const std::map<int, std::set<uint64_t>>& comms_of_node);

// The collectives on which `log` (this node) and `other` (another node's
// window) disagree: the first number per communicator, and only numbers
// above `after[comm]` (those already reported). `unaligned` gains the
// communicators whose sequences no longer correspond and is skipped;
// `compared_through[comm]` is raised to the highest number found in
// agreement.
struct Disagreement {
  uint64_t comm_hash = 0;
  uint64_t seq = 0;
};
std::vector<Disagreement> compare_windows(const FingerprintLog& log, const NodeFingerprints& other,
                                          const std::map<uint64_t, uint64_t>& after,
                                          std::set<uint64_t>* unaligned,
                                          std::map<uint64_t, uint64_t>* compared_through);

// The job-wide mismatch of (comm, seq) from every node's window that holds
// it: every such rank's fingerprint and node (mismatch_of; Mismatch::nodes
// filled). Ranks of nodes whose window no longer holds it are not in it.
Mismatch mismatch_from_windows(uint64_t comm_hash, uint64_t seq,
                               const std::vector<NodeFingerprints>& windows);

// A job-wide mismatch as the store carries it between nodes, and back.
std::string job_mismatch_text(const Mismatch& m, int from_node);
bool parse_job_mismatch(const std::string& text, Mismatch* out, int* from_node, std::string* error);

}  // namespace xpu_timer::supervisor
