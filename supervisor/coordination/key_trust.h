// Which keys of the job's store this node believes: store_trust.h's rules
// applied as the job view reads (job_view.h). This node claims
// <root>/owners/<node> under its lease (create-if-absent) and brings its
// copy of the owners up to date every round (prefix_copy.h: only the owner
// keys changed since, or all of them once one is gone); a key of node N
// counts only under N's owner lease, for N within the job's node count. A
// key refused is said once in the log (ignore()), whichever part of the
// view refused it.
//
// Threads: the view's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/prefix_copy.h"
#include "supervisor/coordination/store_trust.h"

namespace xpu_timer::supervisor {

class KeyTrust {
 public:
  // `store` must outlive this; `url` names the store in the log; `root`:
  // /xpu_timer/<job id>.
  KeyTrust(CoordinationStore* store, std::string url, std::string root);

  // The job's size as this node's ranks say (set every round they are known).
  void set_job(const JobShape& job) { job_ = job; }
  const JobShape& job() const { return job_; }

  // Claims this node's owner key if it must, and reads every owner; false
  // when a store call failed. Afterwards owns_node() says whether the key is
  // this client's: if not, what this node publishes does not count (it is
  // claimed again next round; free once its holder's lease ends).
  bool read_owners(int node, const std::string& host);
  // What read_owners() asks the store first (CoordinationStore::prefetch).
  PrefixQuery next_owners_query() const { return owner_keys_.next_query(); }
  bool owns_node() const { return claimed_; }

  // Whether `kv` (a key of `node`) was written by the node's owner. A node
  // claims its owner key before it writes anything else, but a round reads
  // the owners before the other keys: a key of a node of the job with no
  // owner yet, or another one, reads the owners again (once a round). Says
  // once per key why not.
  bool trusted(const KeyValue& kv, int node);
  // The same against the owners as last read, without reading them again
  // or saying anything.
  bool written_by_owner(const KeyValue& kv, int node, std::string* why) const;
  // The owner lease of each node, as last read.
  const std::map<int, int64_t>& owners() const { return owners_; }
  // Reads of the owners that took every owner key (prefix_copy.h).
  uint64_t whole_owner_reads() const { return owner_keys_.whole_reads(); }

  // Says once per key that a value read from the store is not ours to use.
  void ignore(const KeyValue& kv, const std::string& why);

 private:
  CoordinationStore* const store_;
  const std::string url_;
  bool read_owner_keys();

  const std::string owners_dir_;  // <root>/owners/
  PrefixCopy owner_keys_;
  JobShape job_;
  std::map<int, int64_t> owners_;
  bool owners_reread_ = false;  // owners_ was read again this round (trusted())
  bool claimed_ = false;        // this node's owner key was created (or is being re-claimed)
  bool owner_lost_said_ = false;
  std::set<std::string> bad_keys_;  // warned about once
};

}  // namespace xpu_timer::supervisor
