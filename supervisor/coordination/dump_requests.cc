#include "supervisor/coordination/dump_requests.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/parse_number.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {

DumpRequests::DumpRequests(CoordinationStore* store, KeyTrust* trust, std::string url,
                           const std::string& root)
    : store_(store), trust_(trust), url_(std::move(url)), dir_(root + "/dumps/"), keys_(dir_) {}

void DumpRequests::ask(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  queued_.push_back(reason);
}

bool DumpRequests::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !queued_.empty();
}

std::vector<std::string> DumpRequests::take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.swap(queued_);
  return out;
}

void DumpRequests::requeue(const std::vector<std::string>& reasons) {
  std::lock_guard<std::mutex> lock(mu_);
  queued_.insert(queued_.begin(), reasons.begin(), reasons.end());
}

bool DumpRequests::put(const std::vector<std::string>& reasons, int node, double now_s) {
  for (const std::string& reason : reasons) {
    char name[64];
    std::snprintf(name, sizeof(name), "%013llu-%d", static_cast<unsigned long long>(now_s * 1000),
                  node);
    const std::string key = dir_ + name;
    seen_.insert(key);  // ours: not handed back to us
    const nlohmann::json v = {{"reason", reason}, {"node", node}};
    if (!store_->put(key, v.dump())) return false;
    mine_.emplace_back(key, now_s);
  }
  while (!mine_.empty() && now_s - mine_.front().second >= kRequestLifeS) {
    if (!store_->remove(mine_.front().first)) return false;
    mine_.pop_front();
  }
  return true;
}

double DumpRequests::asked_at_s(const std::string& key) const {
  std::string_view ms = std::string_view(key).substr(key.size() >= dir_.size() ? dir_.size() : 0);
  return static_cast<double>(take_int(&ms).value_or(0)) / 1000;
}

bool DumpRequests::read(const std::set<int>& alarmed,
                        std::vector<std::pair<std::string, int>>* asked) {
  if (!keys_.read(store_)) return false;
  std::vector<KeyValue> kvs;
  kvs.reserve(keys_.keys().size());
  for (const auto& [key, kv] : keys_.keys()) kvs.push_back(kv);
  *asked = admit(kvs, alarmed);
  first_read_ = false;
  // What left the store well after its life (the asking node removed it)
  // is forgotten; a request of ours put but not yet in the copy is young.
  const double now_s = unix_now_s();
  for (auto it = seen_.begin(); it != seen_.end();) {
    if (keys_.keys().count(*it) == 0 && now_s - asked_at_s(*it) > 2 * kRequestLifeS) {
      it = seen_.erase(it);
    } else {
      ++it;
    }
  }
  return true;
}

std::vector<std::pair<std::string, int>> DumpRequests::admit(const std::vector<KeyValue>& kvs,
                                                             const std::set<int>& alarmed) {
  std::vector<std::pair<std::string, int>> asked;
  const double now_s = unix_now_s();
  size_t refused = 0;
  std::string first;
  for (const KeyValue& kv : kvs) {
    if (!seen_.insert(kv.key).second || first_read_) continue;
    const nlohmann::json v = nlohmann::json::parse(kv.value, nullptr, false);
    const int node = node_of_key(kv.key, dir_, /*after_dash=*/true);
    std::string why;
    bool from_owner = false;
    if (!v.is_object() || !v.contains("reason") || !v["reason"].is_string()) {
      why = "not a dump request";
    } else if (!v.contains("node") || !v["node"].is_number_integer() ||
               v["node"].get<int64_t>() != node) {
      why = "its key and its body name different nodes";
    } else {
      from_owner = trust_->written_by_owner(kv, node, &why);
    }
    // The asking node's alarm may reach the store after our read of the
    // alarms (it is put first, but read first too): its request waits.
    const double asked_s = asked_at_s(kv.key);
    if (from_owner && alarmed.count(node) == 0 && now_s - asked_s < kRequestWaitS) {
      seen_.erase(kv.key);
      continue;
    }
    if (from_owner && gate_.admit(true, alarmed.count(node) > 0, now_s, &why)) {
      asked.emplace_back(v["reason"].get<std::string>(), node);
      continue;
    }
    if (refused++ == 0) first = kv.key + ": " + why;
  }
  // One line per round, however many: a flood is one line, not many.
  if (refused > 0) {
    SUP_LOG_WARN("coordinator %s: ignoring %zu dump request(s) (%s%s)", url_.c_str(), refused,
                 first.c_str(), refused > 1 ? "; ..." : "");
  }
  return asked;
}

}  // namespace xpu_timer::supervisor
