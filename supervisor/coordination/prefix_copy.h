// A copy of every key under one prefix of the job's store, kept current by
// reading only what changed: the job view's parts that read a folder every
// round (the owners, the alarms, the dump requests) read it through one, so
// that N nodes each reading a folder of N keys every second cost the store
// O(N) and not O(N²) (docs/architecture.md "Jobs of several nodes").
//
// Each read asks for the keys changed since the last one (the store's
// min_mod_revision): an unchanged folder is answered with its header and
// count alone (~150 bytes), however many keys it holds. Keys deleted since
// do not show in that answer, but the store's count of the whole range
// does: a copy holding more keys than the range after the changes are
// applied lost some, and is read whole again at once, as is one whose store
// revision went back (the store lost its data). Values are as the store
// sent them: untrusted, for KeyTrust and the parts to judge.
//
// Threads: the view's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "supervisor/coordination/coordination_store.h"

namespace xpu_timer::supervisor {

class PrefixCopy {
 public:
  explicit PrefixCopy(std::string prefix) : prefix_(std::move(prefix)) {}

  // Brings the copy up to date with `store`; false when a store call failed
  // (the copy stays as it was). `changed` (may be null): whether a key was
  // added, changed or deleted.
  bool read(CoordinationStore* store, bool* changed = nullptr);
  // The keys as of the last read, by key.
  const std::map<std::string, KeyValue>& keys() const { return keys_; }
  const std::string& prefix() const { return prefix_; }
  // The get_prefix call the next read() makes first (for a prefetch).
  PrefixQuery next_query() const { return {prefix_, revision_ == 0 ? 0 : revision_ + 1}; }
  // Reads that took every key (the first, after a deletion, after the store
  // lost its data).
  uint64_t whole_reads() const { return whole_reads_; }

 private:
  bool read_whole(CoordinationStore* store);

  const std::string prefix_;
  std::map<std::string, KeyValue> keys_;
  int64_t revision_ = 0;  // the store's revision at the last read; 0: none yet
  uint64_t whole_reads_ = 0;
};

}  // namespace xpu_timer::supervisor
