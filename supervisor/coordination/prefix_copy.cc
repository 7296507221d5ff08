#include "supervisor/coordination/prefix_copy.h"

#include <utility>
#include <vector>

namespace xpu_timer::supervisor {

bool PrefixCopy::read_whole(CoordinationStore* store) {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;
  if (!store->get_prefix(prefix_, &kvs, &revision, 0)) return false;
  keys_.clear();
  for (KeyValue& kv : kvs) keys_[kv.key] = std::move(kv);
  revision_ = revision;
  ++whole_reads_;
  return true;
}

bool PrefixCopy::read(CoordinationStore* store, bool* changed) {
  if (changed != nullptr) *changed = false;
  if (revision_ == 0) {
    if (!read_whole(store)) return false;
    if (changed != nullptr) *changed = true;
    return true;
  }
  std::vector<KeyValue> kvs;
  int64_t revision = 0;
  int64_t count = 0;
  if (!store->get_prefix(prefix_, &kvs, &revision, revision_ + 1, &count)) return false;
  if (revision >= revision_) {
    std::map<std::string, KeyValue> next = keys_;
    for (KeyValue& kv : kvs) next[kv.key] = std::move(kv);
    // Every key of the range is in `next` (unchanged ones were held, changed
    // ones just came): more keys than the range holds means some are gone.
    if (static_cast<int64_t>(next.size()) == count) {
      if (changed != nullptr) *changed = !kvs.empty();
      keys_ = std::move(next);
      revision_ = revision;
      return true;
    }
  }
  const std::map<std::string, KeyValue> before = std::move(keys_);
  if (!read_whole(store)) {
    keys_ = before;
    return false;
  }
  if (changed != nullptr) {
    *changed = before.size() != keys_.size();
    for (auto a = before.begin(), b = keys_.cbegin(); !*changed && a != before.end(); ++a, ++b) {
      *changed = a->first != b->first || a->second.mod_revision != b->second.mod_revision;
    }
  }
  return true;
}

}  // namespace xpu_timer::supervisor
