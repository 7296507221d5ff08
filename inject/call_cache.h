// A small direct-mapped cache from the bytes of a key to a value, for what a
// hook would otherwise ask a library on every call (cuBLASLt's layout
// attributes, the direction of a cudaMemcpyDefault copy): a sampled-out call
// takes its description from here and makes no library call. An entry is
// found only when the whole key is equal byte for byte, so a cache that is
// keyed by everything the answer depends on is exact; a collision merely
// evicts. Timed calls still ask the library (and store its answer).
//
// Threads: one instance per thread (thread_local), no locks; Key and Value
// are trivially copyable, the table lives in static TLS (no allocation).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace xpu_timer::inject {

template <typename Key, typename Value, int kEntries = 16>
class CallCache {
  static_assert((kEntries & (kEntries - 1)) == 0, "kEntries must be a power of two");
  static_assert(std::is_trivially_copyable_v<Key> && std::is_trivially_copyable_v<Value>);
  static_assert(sizeof(Key) % sizeof(uint64_t) == 0, "the key is hashed in 8-byte words");

 public:
  // True (and *out set) when `key` is in the cache.
  bool find(const Key& key, Value* out) const {
    const Entry& e = entries_[slot_of(key)];
    if (!e.used || std::memcmp(&e.key, &key, sizeof(Key)) != 0) return false;
    *out = e.value;
    return true;
  }
  void store(const Key& key, const Value& value) {
    Entry& e = entries_[slot_of(key)];
    std::memcpy(&e.key, &key, sizeof(Key));
    e.value = value;
    e.used = true;
  }

 private:
  struct Entry {
    Key key;
    Value value;
    bool used;
  };
  static unsigned slot_of(const Key& key) {
    uint64_t words[sizeof(Key) / sizeof(uint64_t)];
    std::memcpy(words, &key, sizeof(Key));
    uint64_t h = 0;
    for (uint64_t w : words) h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return static_cast<unsigned>(h >> 40) & (kEntries - 1);
  }
  Entry entries_[kEntries] = {};
};

}  // namespace xpu_timer::inject
