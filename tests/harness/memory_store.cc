#include "tests/harness/memory_store.h"

namespace xpu_timer::testing {

using supervisor::KeyValue;

void MemoryKeyspace::put(const std::string& key, const std::string& value, int64_t lease) {
  std::lock_guard<std::mutex> lock(mu_);
  KeyValue& kv = kvs_[key];
  kv.key = key;
  kv.value = value;
  kv.lease = lease;
  kv.mod_revision = ++revision_;
}

bool MemoryKeyspace::create(const std::string& key, const std::string& value, int64_t lease) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (kvs_.count(key) > 0) return false;
  }
  put(key, value, lease);
  return true;
}

void MemoryKeyspace::remove(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (kvs_.erase(key) > 0) ++revision_;
}

std::vector<KeyValue> MemoryKeyspace::range(const std::string& prefix, int64_t min_mod_revision,
                                            int64_t* revision, int64_t* count) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<KeyValue> out;
  int64_t in_range = 0;
  for (auto it = kvs_.lower_bound(prefix); it != kvs_.end() && it->first.rfind(prefix, 0) == 0;
       ++it) {
    ++in_range;
    if (it->second.mod_revision >= min_mod_revision) out.push_back(it->second);
  }
  if (revision != nullptr) *revision = revision_;
  if (count != nullptr) *count = in_range;
  return out;
}

void MemoryKeyspace::expire(int64_t lease) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = kvs_.begin(); it != kvs_.end();) {
    it = it->second.lease == lease ? kvs_.erase(it) : std::next(it);
  }
  ++revision_;
}

bool MemoryStore::answer() {
  ++calls;
  error_ = fail ? "memory store: failing as asked" : "";
  return !fail;
}

bool MemoryStore::put(const std::string& key, const std::string& value) {
  if (!answer()) return false;
  keyspace_->put(key, value, lease_);
  return true;
}

bool MemoryStore::get_prefix(const std::string& prefix, std::vector<KeyValue>* out,
                             int64_t* revision, int64_t min_mod_revision, int64_t* count) {
  if (!answer()) return false;
  *out = keyspace_->range(prefix, min_mod_revision, revision, count);
  return true;
}

bool MemoryStore::create(const std::string& key, const std::string& value, bool* created) {
  if (!answer()) return false;
  *created = keyspace_->create(key, value, lease_);
  return true;
}

bool MemoryStore::remove(const std::string& key) {
  if (!answer()) return false;
  keyspace_->remove(key);
  return true;
}

bool MemoryStore::keep_alive() { return answer(); }

}  // namespace xpu_timer::testing
