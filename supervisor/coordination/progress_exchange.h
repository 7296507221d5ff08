// The job view's progress part (job_view.h): where every node's ranks are.
// Each node puts <root>/nodes/<node>, its document (node_progress.h), only
// when it changed but for its times, and <root>/stamps/<node>, its times (a
// few hundred bytes), every exchange; it reads every stamp, and of
// <root>/nodes/ only the documents changed since the last read (the store's
// min_mod_revision). A healthy job thus costs the store a small read per
// node per period, and a steady hang (where only times move) each node's
// stamp out and the others' stamps in (bench/results/, "job-scale").
//
// So that a steady alarm does not cost the store O(nodes²) (every node
// reading every stamp), the job's leader (leader_election.h) reads every
// stamp, as before, and puts <root>/leader/digest (progress_digest.h): the
// stamps that say more than "fresh", and a hash of the nodes that are.
// Every other node reads the digest instead of the stamps, and reads the
// stamps itself only when the digest does not count: not under the lease
// that holds the leader key and owns the node it names (a forger's),
// older than kDigestMaxAgeS (a leader gone: replaced once its lease ends),
// or covering other documents than this node holds (one changed between
// the two reads).
//
// In quiet times (no alarm stands) the other nodes need only which ranks
// each node holds and their communicators (a rank of the world not yet
// seen, fingerprint_peers), not their progress: a quiet exchange puts this
// node's document only when that changed (node_shape_id) and reads only
// the documents changed since, no stamp and no digest. A healthy job then
// costs the store a header per node and exchange, where every node would
// otherwise read every node's document, all changed since (O(nodes²)).
// The first exchange of an alarm puts the whole document again.
//
// It keeps the documents it read, by node, and applies to each the node's
// latest stamp. A stamp that names a document it lacks (the store lost or
// missed a change: its revision went back, a read raced a put) keeps that
// node's previous snapshot and makes the next read take every document
// again. A document or stamp counts only when KeyTrust and store_trust's
// checks let it; a node whose keys are gone leaves at the next exchange.
//
// Threads: the view's thread only; merge_progress() is pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/key_trust.h"
#include "supervisor/coordination/leader_election.h"
#include "supervisor/coordination/node_progress.h"
#include "supervisor/coordination/progress_digest.h"

namespace xpu_timer::supervisor {

// `local` (this node's ranks, as `node` of a job of `world_size`) joined
// with the snapshots of `known` (the other nodes', by node) at most `fresh_s`
// old. While `alarm` stands, an older one is merged without news: its ranks
// silent (RankSample::silent_s: not judged), for as long as the node was
// last heard from as `heard_unix_s` says (its snapshot's age where it says
// nothing), nothing in flight, their communicators as last known (who is a
// member of what), heartbeats as last heard; `news_pending` while that is
// less than `fresh_s` and `connected` (its news can still come).
Snapshot merge_progress(const Snapshot& local, int node, int world_size,
                        const std::map<int, NodeProgress>& known, bool alarm, double fresh_s,
                        const std::map<int, double>& heard_unix_s = {}, bool connected = true);

class ProgressExchange {
 public:
  // Quiet periods exchange this rarely once the other nodes are known.
  static constexpr double kQuietRefreshS = 120;
  // A digest older than this is a leader gone or late: the stamps are read.
  static constexpr double kDigestMaxAgeS = 3;

  // `store`, `trust` and `leader` must outlive this; `leader` is brought
  // up to date by the round before read().
  ProgressExchange(CoordinationStore* store, KeyTrust* trust, const LeaderElection* leader,
                   std::string url, const std::string& root);

  // Whether this round exchanges documents: while some node's alarm
  // stands, until every rank of the world is on this node or in another
  // node's document (nodes start at different times; one that came before
  // the others must not wait for the quiet refresh to learn of them), when
  // this node's shape changed since it was put (a rank that registered,
  // learnt its node or restarted: its first document may have said node -1
  // for it, which the others refuse), and every kQuietRefreshS.
  bool due(const std::optional<NodeProgress>& mine, bool alarm, double now_s) const;
  // Puts this node's document (if it changed) and stamp; `quiet`: the
  // document and its stamp only if its shape changed. False when a store
  // call failed.
  bool publish(const NodeProgress& mine, bool quiet = false);
  // What was put under a lease that does not own the node does not count:
  // the next publish() puts the document again.
  void forget_published() { put_doc_ = put_shape_ = 0; }
  // Reads the stamps and the changed documents into `others` (the other
  // nodes' snapshots, stamps applied, one node per rank); `quiet`: the
  // changed documents alone, their times as put. False when a store call
  // failed.
  bool read(const std::optional<NodeProgress>& mine, std::vector<NodeProgress>* others,
            bool quiet = false);
  // The exchange of `now_s` is done (with `mine` published, if any): its
  // `others` are the nodes known until the next.
  void exchanged(bool published, double now_s, std::vector<NodeProgress> others);
  // The other nodes as of the last exchange.
  const std::vector<NodeProgress>& others() const { return others_; }

  // Documents the store sent (this node's own included), and reads that
  // took every document.
  uint64_t docs_read() const { return docs_read_; }
  uint64_t full_reads() const { return full_reads_; }
  // Reads of every stamp, and exchanges that took the leader's digest
  // instead; whether this node led the last exchange.
  uint64_t stamp_reads() const { return stamp_reads_; }
  uint64_t digest_reads() const { return digest_reads_; }
  bool leading() const { return leading_; }

 private:
  // Sets leading_; `digest` gets the leader's digest if this node does not
  // lead and the digest counts.
  bool read_digest(double now_s, std::optional<ProgressDigest>* digest);
  // Every stamp that counts (their texts by node), and the nodes whose
  // stamp key holds one that does not.
  bool read_stamps(int me, double now_s, std::vector<NodeStamp>* stamps, std::set<int>* refused,
                   std::map<int, std::string>* texts);
  // The documents changed since the last read (or all of them); their keys
  // into `arrived`.
  bool read_docs(int me, double now_s, std::set<std::string>* arrived);
  // The stamps `d` stands for; false when it does not cover the documents
  // this node holds.
  bool stamps_from_digest(const ProgressDigest& d, int me, double now_s,
                          std::vector<NodeStamp>* stamps);
  // The leader's digest of `stamps`.
  bool put_digest(const std::optional<NodeProgress>& mine, double now_s,
                  const std::vector<NodeStamp>& stamps, const std::map<int, std::string>& texts);
  // Keeps one node per rank in `others` (this node's ranks first, then the
  // lowest node's); says once which documents lost. True.
  bool resolve_rank_conflicts(const std::optional<NodeProgress>& mine,
                              std::vector<NodeProgress>* others);
  // The previous snapshot of `node` stands: appended to `out`.
  void keep_previous(int node, std::vector<NodeProgress>* out) const;

  CoordinationStore* const store_;
  KeyTrust* const trust_;
  const LeaderElection* const leader_;
  const std::string url_;
  const std::string nodes_dir_;   // <root>/nodes/
  const std::string stamps_dir_;  // <root>/stamps/
  const std::string digest_key_;  // <root>/leader/digest
  bool leading_ = false;          // this node led the last exchange
  uint64_t stamp_reads_ = 0;
  uint64_t digest_reads_ = 0;
  std::vector<NodeProgress> others_;
  double last_exchange_s_ = -1e9;          // unix time of the last documents exchange
  uint64_t put_doc_ = 0;                   // id of our document in the store (0: none)
  uint64_t put_shape_ = 0;                 // its node_shape_id
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
  uint64_t docs_read_ = 0;
  uint64_t full_reads_ = 0;
};

}  // namespace xpu_timer::supervisor
