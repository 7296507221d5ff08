// A coordination store in memory, for the unit tests of the job view's
// parts (supervisor/coordination/): what etcd does that they rely on, and
// nothing else. One MemoryKeyspace is the store the job's nodes share; each
// MemoryStore is one node's client, with its own lease. Keys are kept in
// order, every change takes the next revision, get_prefix honours
// min_mod_revision, create() is create-if-absent, and a key is bound to the
// lease of the client that put it. `fail` makes every call fail (a store
// that does not answer). Not for concurrent clients' threads beyond the one
// mutex.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "supervisor/coordination/coordination_store.h"

namespace xpu_timer::testing {

class MemoryKeyspace {
 public:
  void put(const std::string& key, const std::string& value, int64_t lease);
  bool create(const std::string& key, const std::string& value, int64_t lease);
  void remove(const std::string& key);
  // `count` (may be null): every key of the range, as etcd counts them.
  std::vector<supervisor::KeyValue> range(const std::string& prefix, int64_t min_mod_revision,
                                          int64_t* revision, int64_t* count = nullptr) const;
  // Every key bound to `lease` goes (the lease expired).
  void expire(int64_t lease);

 private:
  mutable std::mutex mu_;
  int64_t revision_ = 1;
  std::map<std::string, supervisor::KeyValue> kvs_;
};

class MemoryStore final : public supervisor::CoordinationStore {
 public:
  MemoryStore(MemoryKeyspace* keyspace, int64_t lease) : keyspace_(keyspace), lease_(lease) {}

  bool put(const std::string& key, const std::string& value) override;
  bool get_prefix(const std::string& prefix, std::vector<supervisor::KeyValue>* out,
                  int64_t* revision, int64_t min_mod_revision = 0,
                  int64_t* count = nullptr) override;
  bool create(const std::string& key, const std::string& value, bool* created) override;
  int64_t lease() const override { return lease_; }
  bool remove(const std::string& key) override;
  bool keep_alive() override;
  const std::string& error() const override { return error_; }

  bool fail = false;
  int calls = 0;  // every call, failed or not

 private:
  bool answer();

  MemoryKeyspace* const keyspace_;
  const int64_t lease_;
  std::string error_;
};

}  // namespace xpu_timer::testing
