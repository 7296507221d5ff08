// The answers of a CoordinationStore::prefetch(), kept for the get_prefix
// calls that follow it: each is taken once, by a call with the same prefix
// and min_mod_revision, unless this client wrote a key under its prefix
// since (a put, create or remove: what it reads must show its own writes)
// or it is older than kFreshNs (a read of the next round asks the store).
//
// Threads: the store's owner thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "supervisor/coordination/coordination_store.h"

namespace xpu_timer::supervisor {

// One range of a prefetch's answer, as get_prefix gives it.
struct PrefixAnswer {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;
  int64_t count = 0;
};

class PrefetchedRanges {
 public:
  // Well within a round of the job view (1 s): the reads of one round only.
  static constexpr uint64_t kFreshNs = 500ull * 1000 * 1000;

  // Keeps `answers[i]` for `queries[i]` (as many of each), read at `now_ns`
  // (CLOCK_MONOTONIC); what was kept before is dropped.
  void keep(const std::vector<PrefixQuery>& queries, std::vector<PrefixAnswer> answers,
            uint64_t now_ns);
  // The kept answer for (prefix, min_mod_revision), handed over and dropped;
  // false when there is none (the caller asks the store). Its outputs are
  // get_prefix's (`revision` and `count` may be null).
  bool take(const std::string& prefix, int64_t min_mod_revision, uint64_t now_ns,
            std::vector<KeyValue>* out, int64_t* revision, int64_t* count);
  // This client wrote `key`: the answers of every prefix of it are dropped.
  void written(const std::string& key);
  void clear() { kept_.clear(); }
  // get_prefix calls answered from a prefetch, in all.
  uint64_t taken() const { return taken_; }

 private:
  struct Kept {
    PrefixQuery query;
    PrefixAnswer answer;
  };
  std::vector<Kept> kept_;
  uint64_t kept_ns_ = 0;
  uint64_t taken_ = 0;
};

}  // namespace xpu_timer::supervisor
