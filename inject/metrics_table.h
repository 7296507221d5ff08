// Aggregates of completed operations per (OpName, DType, size bucket,
// nranks), kept in exactly the layout of the page's metrics[] so that
// publishing is a copy of the slots that changed.
//
// Threads: the Poller only.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/status_page_layout.h"

namespace xpu_timer::inject {

class MetricsTable {
 public:
  struct Key {
    uint16_t name;        // proto::OpName
    uint8_t dtype;        // proto::DType
    uint8_t size_bucket;  // log2 of bytes (NCCL) or flops (GEMM)
    uint32_t nranks;      // NCCL communicator size, 0 for GEMMs
    uint8_t algo = 0;       // proto::NcclAlgo (NCCL; 0 = unknown)
    uint8_t proto = 0;      // proto::NcclProto
    uint8_t transport = 0;  // proto::NcclTransport
  };

  MetricsTable() { std::memset(static_cast<void*>(slots_), 0, sizeof(slots_)); }

  // Adds one completed operation. False when the table is full and the key
  // is new: the sample is lost (the caller counts it).
  // `nchannels` (NCCL, 0 = unknown) replaces the slot's latest channel count.
  bool add(const Key& key, uint64_t duration_ns, uint64_t bytes, uint64_t flops, uint64_t now_ns,
           uint32_t nchannels = 0);

  // Adds one call completed without a timing (sampled out). False as add().
  bool add_untimed(const Key& key, uint64_t bytes, uint64_t flops, uint64_t now_ns);

  uint32_t size() const { return size_; }
  const proto::MetricSlot& slot(uint32_t i) const { return slots_[i]; }

  // Calls f(index, slot) for every slot changed since the last call.
  template <typename F>
  void drain_dirty(F&& f) {
    for (uint32_t i = 0; i < size_; ++i) {
      if (!dirty_[i]) continue;
      dirty_[i] = false;
      f(i, slots_[i]);
    }
  }

 private:
  int find_or_add(const Key& key);

  proto::MetricSlot slots_[proto::kMaxMetrics];
  bool dirty_[proto::kMaxMetrics] = {};
  uint32_t size_ = 0;
  int last_hit_ = -1;  // consecutive samples often share a key (one GEMM shape per layer)
};

}  // namespace xpu_timer::inject
