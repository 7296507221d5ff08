// The job view's alarm part (job_view.h): <root>/alarms/<node> stands while
// that node wants the job's view now (wants_job_view: a rank past half the
// hang timeout, its ranks still for half the stall time, a verdict
// standing). Every round puts or removes this node's key and brings its
// copy of the alarms up to date (prefix_copy.h: the keys changed since the
// last read, a header alone when none did, so a job whose every node
// raised its alarm still costs each node O(1) a round): while any node's
// stands, the nodes exchange their
// progress every period, and its dump requests are obeyed. A node's alarm
// counts only under its owner lease (KeyTrust). The same folder carries the
// job-wide mismatches (mismatch-<comm>-<seq>), handed to the fingerprint
// part.
//
// Threads: the view's thread only.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/key_trust.h"
#include "supervisor/coordination/prefix_copy.h"

namespace xpu_timer::supervisor {

class NodeAlarms {
 public:
  static constexpr char kMismatchKeyPrefix[] = "mismatch-";

  // `store` and `trust` must outlive this.
  NodeAlarms(CoordinationStore* store, KeyTrust* trust, const std::string& root);

  // Puts or removes this node's alarm key when `alarm` changed since the
  // last call that succeeded; false when the store call failed.
  bool put(int node, bool alarm);
  // Reads the alarms into alarmed(); the mismatch keys among them go to
  // `mismatches`, in key order (none while the job's size is unknown).
  // False when the store call failed.
  bool read(std::vector<KeyValue>* mismatches);
  // What read() asks the store first (CoordinationStore::prefetch).
  PrefixQuery next_query() const { return keys_.next_query(); }
  // The nodes whose alarm stands, as of the last read.
  const std::set<int>& alarmed() const { return alarmed_; }

 private:
  CoordinationStore* const store_;
  KeyTrust* const trust_;
  const std::string dir_;   // <root>/alarms/
  PrefixCopy keys_;
  bool alarm_put_ = false;  // our alarm key is in the store
  std::set<int> alarmed_;
};

}  // namespace xpu_timer::supervisor
