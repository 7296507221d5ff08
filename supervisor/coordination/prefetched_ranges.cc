#include "supervisor/coordination/prefetched_ranges.h"

#include <utility>

namespace xpu_timer::supervisor {

void PrefetchedRanges::keep(const std::vector<PrefixQuery>& queries,
                            std::vector<PrefixAnswer> answers, uint64_t now_ns) {
  kept_.clear();
  kept_ns_ = now_ns;
  for (size_t i = 0; i < queries.size() && i < answers.size(); ++i) {
    kept_.push_back(Kept{queries[i], std::move(answers[i])});
  }
}

bool PrefetchedRanges::take(const std::string& prefix, int64_t min_mod_revision, uint64_t now_ns,
                            std::vector<KeyValue>* out, int64_t* revision, int64_t* count) {
  if (now_ns < kept_ns_ || now_ns - kept_ns_ >= kFreshNs) {
    kept_.clear();
    return false;
  }
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (it->query.prefix != prefix || it->query.min_mod_revision != min_mod_revision) continue;
    *out = std::move(it->answer.kvs);
    if (revision != nullptr) *revision = it->answer.revision;
    if (count != nullptr) *count = it->answer.count;
    kept_.erase(it);
    ++taken_;
    return true;
  }
  return false;
}

void PrefetchedRanges::written(const std::string& key) {
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (key.compare(0, it->query.prefix.size(), it->query.prefix) == 0) {
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace xpu_timer::supervisor
