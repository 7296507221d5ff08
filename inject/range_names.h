// Names of the program's NVTX ranges and traced Python functions, interned to
// small ids (inject/nvtx_ranges.h, inject/python_tracer.h). A name is kept
// per kind: an NVTX range and a function of the same name are two entries.
//
// A range's name is its message cut to proto::kRangeNameBytes - 1 bytes. The
// table holds proto::kMaxRanges names: id 0 is "(other)", where every name
// after the first kMaxRanges - 1 goes, so that the status page, the metric
// labels and the flight recorder's names region stay bounded however many
// names a program makes up (a name per layer, per micro-batch...).
//
// Threads: intern() from any thread (the user's threads that open ranges);
// a known name is found without a lock (an open-addressing table of
// published keys), a new one is added under a mutex. size() and name() from
// any thread: a name is written before size() counts it, never changed after.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "common/status_page_layout.h"

namespace xpu_timer::inject {

class RangeNames {
 public:
  static constexpr uint32_t kCapacity = proto::kMaxRanges;
  static constexpr uint16_t kOther = 0;

  RangeNames();
  RangeNames(const RangeNames&) = delete;
  RangeNames& operator=(const RangeNames&) = delete;

  // The id of the first `len` bytes of `name` of this kind (cut as above);
  // kOther once the table is full. Never allocates.
  uint16_t intern(const char* name, size_t len, proto::RangeKind kind = proto::RangeKind::kNvtx);
  // Names in the table (ids 0 .. size()-1).
  uint32_t size() const { return size_.load(std::memory_order_acquire); }
  // NUL-terminated; id < size().
  const char* name(uint32_t id) const { return names_[id]; }
  // id < size().
  proto::RangeKind kind(uint32_t id) const { return kinds_[id]; }

 private:
  static constexpr uint32_t kSlots = 4 * kCapacity;  // a power of two
  struct Slot {
    std::atomic<uint64_t> key{0};  // hash | 1 once published; 0: empty
    std::atomic<uint16_t> id{0};
  };
  // -1: not there.
  int find(uint64_t key, const char* name, size_t len, proto::RangeKind kind) const;

  Slot slots_[kSlots];
  char names_[kCapacity][proto::kRangeNameBytes] = {};
  proto::RangeKind kinds_[kCapacity] = {};  // written with names_
  std::atomic<uint32_t> size_{0};
  std::mutex mu_;  // adders only
};

}  // namespace xpu_timer::inject
