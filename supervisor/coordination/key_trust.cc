#include "supervisor/coordination/key_trust.h"

#include <utility>
#include <vector>

#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {

KeyTrust::KeyTrust(CoordinationStore* store, std::string url, std::string root)
    : store_(store),
      url_(std::move(url)),
      owners_dir_(std::move(root) + "/owners/"),
      owner_keys_(owners_dir_) {}

bool KeyTrust::read_owner_keys() {
  if (!owner_keys_.read(store_)) return false;
  std::vector<KeyValue> kvs;
  kvs.reserve(owner_keys_.keys().size());
  for (const auto& [key, kv] : owner_keys_.keys()) kvs.push_back(kv);
  owners_ = owner_leases(kvs, owners_dir_, job_);
  return true;
}

bool KeyTrust::read_owners(int node, const std::string& host) {
  if (!claimed_) {
    bool created = false;
    if (!store_->create(owners_dir_ + std::to_string(node), host, &created)) return false;
    claimed_ = true;
  }
  if (!read_owner_keys()) return false;
  owners_reread_ = false;
  const auto it = owners_.find(node);
  if (it != owners_.end() && it->second == store_->lease()) {
    owner_lost_said_ = false;
    return true;
  }
  // Not ours (yet, or any more): claimed again next round; free once its
  // holder's lease ends.
  claimed_ = false;
  if (it != owners_.end() && !owner_lost_said_) {
    owner_lost_said_ = true;
    SUP_LOG_WARN(
        "coordinator %s: node %d's owner key is held by lease %lld, not this supervisor's (%lld): "
        "the other nodes ignore what this node publishes until it is ours (another supervisor "
        "running as node %d?)",
        url_.c_str(), node, static_cast<long long>(it->second),
        static_cast<long long>(store_->lease()), node);
  }
  return true;
}

bool KeyTrust::trusted(const KeyValue& kv, int node) {
  std::string why;
  if (written_by_owner(kv, node, &why)) return true;
  if (!owners_reread_ && node >= 0 && node < job_.node_count) {
    owners_reread_ = true;
    if (read_owner_keys() && written_by_owner(kv, node, &why)) return true;
  }
  ignore(kv, why);
  return false;
}

bool KeyTrust::written_by_owner(const KeyValue& kv, int node, std::string* why) const {
  return supervisor::written_by_owner(kv, node, owners_, why);
}

void KeyTrust::ignore(const KeyValue& kv, const std::string& why) {
  if (bad_keys_.insert(kv.key).second) {
    SUP_LOG_WARN("coordinator %s: ignoring %s: %s", url_.c_str(), kv.key.c_str(), why.c_str());
  }
}

}  // namespace xpu_timer::supervisor
