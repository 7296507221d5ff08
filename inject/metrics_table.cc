#include "inject/metrics_table.h"

namespace xpu_timer::inject {
namespace {

bool matches(const proto::MetricSlot& s, const MetricsTable::Key& k) {
  return s.name == k.name && s.dtype == k.dtype && s.size_bucket == k.size_bucket &&
         s.nranks == k.nranks && s.algo == k.algo && s.proto == k.proto &&
         s.transport == k.transport;
}

}  // namespace

int MetricsTable::find_or_add(const Key& key) {
  if (last_hit_ >= 0 && matches(slots_[last_hit_], key)) return last_hit_;
  for (uint32_t i = 0; i < size_; ++i) {
    if (matches(slots_[i], key)) return last_hit_ = static_cast<int>(i);
  }
  if (size_ >= static_cast<uint32_t>(proto::kMaxMetrics)) return -1;
  proto::MetricSlot& s = slots_[size_];
  s.name = key.name;
  s.dtype = key.dtype;
  s.size_bucket = key.size_bucket;
  s.nranks = key.nranks;
  s.algo = key.algo;
  s.proto = key.proto;
  s.transport = key.transport;
  return last_hit_ = static_cast<int>(size_++);
}

bool MetricsTable::add(const Key& key, uint64_t duration_ns, uint64_t bytes, uint64_t flops,
                       uint64_t now_ns, uint32_t nchannels) {
  const int i = find_or_add(key);
  if (i < 0) return false;
  proto::MetricSlot& s = slots_[i];
  s.count += 1;
  s.sum_ns += duration_ns;
  s.sum_bytes += bytes;
  s.sum_flops += flops;
  s.last_update_ns = now_ns;
  if (nchannels != 0) s.nchannels = nchannels;
  s.hist[proto::hist_bucket_for_ns(duration_ns)] += 1;
  dirty_[i] = true;
  return true;
}

bool MetricsTable::add_untimed(const Key& key, uint64_t bytes, uint64_t flops, uint64_t now_ns) {
  const int i = find_or_add(key);
  if (i < 0) return false;
  proto::MetricSlot& s = slots_[i];
  s.untimed_count += 1;
  s.untimed_bytes += bytes;
  s.untimed_flops += flops;
  s.last_update_ns = now_ns;
  dirty_[i] = true;
  return true;
}

}  // namespace xpu_timer::inject
