#include "supervisor/coordination/leader_election.h"

#include <vector>

namespace xpu_timer::supervisor {

LeaderElection::LeaderElection(CoordinationStore* store, KeyTrust* trust, const std::string& root)
    : store_(store), trust_(trust), key_(root + "/leader/node") {}

bool LeaderElection::round(int me) {
  leading_ = false;
  leader_node_ = -1;
  leader_lease_ = 0;
  std::vector<KeyValue> kvs;
  if (!store_->get_prefix(key_, &kvs, nullptr)) return false;
  const KeyValue* leader = nullptr;
  for (const KeyValue& kv : kvs) {
    if (kv.key == key_) leader = &kv;
  }
  if (leader == nullptr) {
    // None: this node runs for it, if it writes for its node. Whoever
    // creates the key first leads until its lease ends.
    if (me < 0 || !trust_->owns_node()) return true;
    bool created = false;
    if (!store_->create(key_, std::to_string(me), &created)) return false;
    if (created) {
      leading_ = true;
      leader_node_ = me;
      leader_lease_ = store_->lease();
      ++won_;
    }
    return true;
  }
  // A leader counts only as the owner of the node it names: anyone else's
  // key (a forger's) is ignored. (trusted() reads the owners again once a
  // round: the leader may have claimed its owner key after this round's
  // read of them.)
  const int node = node_of_key(leader->value, "");
  if (leader->value != std::to_string(node)) {
    trust_->ignore(*leader, "not a node's number");
    return true;
  }
  if (!trust_->trusted(*leader, node)) return true;
  leader_node_ = node;
  leader_lease_ = leader->lease;
  leading_ = node == me && leader->lease == store_->lease();
  return true;
}

}  // namespace xpu_timer::supervisor
