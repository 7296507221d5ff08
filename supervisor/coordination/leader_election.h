// The job view's leader part (job_view.h): one node of the job reads what
// every node publishes and puts one summary of it for the others, so that
// what each node reads does not grow with the job (the progress digest:
// progress_exchange.h; the slow-rank digest: slow_summary_exchange.h).
//
// The leader is the first node to create <root>/leader/node (its number)
// under its lease: it leads until that lease ends (its supervisor died, or
// could not reach the store for a lease's time), and then the first node
// to find the key gone creates it again. Every round reads the key (one key,
// a few hundred bytes), so a lost leader is replaced within a lease and a
// round. The key counts only under the lease that owns the node it names
// (KeyTrust): anyone else's is ignored, and every node then reads what the
// leader would have summed up itself (correct, and O(nodes) for it).
//
// Threads: the view's thread only.
#pragma once

#include <cstdint>
#include <string>

#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/key_trust.h"

namespace xpu_timer::supervisor {

class LeaderElection {
 public:
  // `store` and `trust` must outlive this.
  LeaderElection(CoordinationStore* store, KeyTrust* trust, const std::string& root);

  // Reads the leader key, and runs for leader when there is none and this
  // node (`me`, -1: none yet) writes for its node; false when a store call
  // failed (then no one leads as far as this node knows).
  bool round(int me);
  // What round() asks the store first (CoordinationStore::prefetch).
  PrefixQuery next_query() const { return {key_, 0}; }
  // Whether this node leads, as of the last round.
  bool leading() const { return leading_; }
  // The leader's node and the lease its keys count under; -1 and 0 when no
  // leader counts.
  int leader_node() const { return leader_node_; }
  int64_t leader_lease() const { return leader_lease_; }
  // Rounds in which this node created the key (became the leader).
  uint64_t elections_won() const { return won_; }
  // A summary the leader put under `key` counts only under its lease.
  bool from_leader(const KeyValue& kv) const {
    return leader_lease_ != 0 && kv.lease == leader_lease_;
  }

 private:
  CoordinationStore* const store_;
  KeyTrust* const trust_;
  const std::string key_;  // <root>/leader/node
  bool leading_ = false;
  int leader_node_ = -1;
  int64_t leader_lease_ = 0;
  uint64_t won_ = 0;
};

}  // namespace xpu_timer::supervisor
