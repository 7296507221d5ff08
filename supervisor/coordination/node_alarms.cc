#include "supervisor/coordination/node_alarms.h"

#include <algorithm>

namespace xpu_timer::supervisor {

NodeAlarms::NodeAlarms(CoordinationStore* store, KeyTrust* trust, const std::string& root)
    : store_(store), trust_(trust), dir_(root + "/alarms/"), keys_(dir_) {}

bool NodeAlarms::put(int node, bool alarm) {
  if (alarm == alarm_put_) return true;
  const std::string key = dir_ + std::to_string(node);
  if (!(alarm ? store_->put(key, "1") : store_->remove(key))) return false;
  alarm_put_ = alarm;
  return true;
}

bool NodeAlarms::read(std::vector<KeyValue>* mismatches) {
  if (!keys_.read(store_)) return false;
  alarmed_.clear();
  if (trust_->job().node_count <= 0) return true;  // no rank registered here: nothing to judge by
  for (const auto& [key, kv] : keys_.keys()) {
    const std::string name = kv.key.substr(std::min(kv.key.size(), dir_.size()));
    if (name.rfind(kMismatchKeyPrefix, 0) == 0) {
      mismatches->push_back(kv);
      continue;
    }
    // A node's alarm (<node>), from that node's owner only.
    const int node = node_of_key(kv.key, dir_);
    if (name == std::to_string(node) && trust_->trusted(kv, node)) alarmed_.insert(node);
    if (name != std::to_string(node)) trust_->ignore(kv, "not an alarm of a node");
  }
  return true;
}

}  // namespace xpu_timer::supervisor
