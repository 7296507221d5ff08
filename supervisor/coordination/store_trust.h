// What a node's supervisor believes of what it reads in the job's store.
// The store is shared with whoever can write to the job's prefix (another
// job, a test, someone hostile), so a value counts only where the job can
// vouch for it (docs/architecture.md "Jobs of several nodes"):
//   - one writer per node: a node claims <root>/owners/<node> with a
//     create-if-absent transaction under its lease (coordination_store.h
//     create()); a node's document, stamp, alarm, fingerprints and dump
//     requests count only when their key's lease is the owner key's lease;
//   - a node id within the job's node count, which the job's ranks tell:
//     torchrun's WORLD_SIZE / LOCAL_WORLD_SIZE (rounded up) from the
//     registrations of this node's ranks (torchrun gives every node the same
//     LOCAL_WORLD_SIZE);
//   - a document's ranks within the world, at most LOCAL_WORLD_SIZE of them,
//     each naming the document's node, none claimed by this node's own ranks
//     or by an accepted document of a lower node;
//   - clocks (a document's or stamp's wall clock) at most kMaxClockSkewS
//     ahead of the reader's: a time from the future would keep old news
//     "fresh" (JobView merges a document while it is young) for as long as
//     it is ahead.
// Pure functions and one small class; JobView's thread uses them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "supervisor/analysis/rank_sample.h"
#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/node_progress.h"

namespace xpu_timer::supervisor {

// The same bound as JobView::kFreshS: at worst a clock that far ahead
// doubles how long a silent node's news is taken as fresh. Clocks of one
// cluster (NTP) agree within milliseconds; a host off by more is named in
// the warning that refuses its documents.
constexpr double kMaxClockSkewS = 10;

struct JobShape {
  int world_size = 0;
  int local_world_size = 0;
  int node_count = 0;  // ceil(world_size / local_world_size); 0: unknown (nothing trusted)
};
JobShape job_shape(int world_size, int local_world_size);

// The node a key names right after `dir` (a prefix ending in '/'): "7" in
// <dir>7, <dir>7/..., or after the last '-' for dump requests
// (<dir><unix ms>-7). -1 when it is not a plain decimal number.
int node_of_key(const std::string& key, const std::string& dir, bool after_dash = false);

// The owners of the node slots, from the keys under <root>/owners/: node ->
// lease, for nodes of the job only.
std::map<int, int64_t> owner_leases(const std::vector<KeyValue>& kvs, const std::string& dir,
                                    const JobShape& job);

// Whether the value `kv` for `node` was written by that node's owner; with
// `why` set when not.
bool written_by_owner(const KeyValue& kv, int node, const std::map<int, int64_t>& owners,
                      std::string* why);

// Why `p`, read from key <root>/nodes/<key_node>, is refused ("" if not):
// the checks above but for the ranks other documents claim.
std::string document_refusal(const NodeProgress& p, int key_node, const JobShape& job,
                             double now_unix_s);
// Why a stamp read from <root>/stamps/<key_node> is refused ("" if not).
std::string stamp_refusal(const NodeStamp& st, int key_node, const JobShape& job,
                          double now_unix_s);

// Of `docs` (the other nodes' documents, each checked alone), those whose
// ranks no other claims first: this node's ranks (`local`), then the
// documents in node order. The others are returned in `refused` (node, why).
std::vector<NodeProgress> without_rank_conflicts(const Snapshot& local,
                                                 std::vector<NodeProgress> docs,
                                                 std::vector<std::pair<int, std::string>>* refused);

// Which dump requests of other nodes this node obeys: from a node of the
// job (its owner's lease) whose alarm stands, and at most one every
// kMinIntervalS. A real hang needs one dump of each node (the declaring node
// dumps its own at once); another request within the interval would dump the
// same hang again, and a flood of them would fill the disk (each dump is the
// stacks and rings of every rank: hundreds of MB at scale). The stack
// collector and the timeline dump each run one at a time on their own
// (incident_dumps.h). JobView's thread only.
class DumpRequestGate {
 public:
  static constexpr double kMinIntervalS = 60;
  // True: hand the request on (and start the interval). Else `why`.
  bool admit(bool from_owner, bool alarm_standing, double now_s, std::string* why);

 private:
  double last_admitted_s_ = -1e18;
};

}  // namespace xpu_timer::supervisor
