// Decides which calls get a full CUDA-event timing, so that the hot path stays
// within the overhead budget (docs/architecture.md "The hot path", 4): each distinct
// (operation, shape) is timed at most `rate` times per second; the other calls
// are only counted (GEMMs) or get a completion marker alone (collectives, for
// hang detection). rate 0 times every call.
//
// Threads: any user thread, lock-free: a fixed open-addressing table of
// atomics, never resized, never freed. A key that finds no slot (table full)
// falls back to one shared per-process limiter, so it is still sampled.
#pragma once

#include <atomic>
#include <cstdint>

namespace xpu_timer::inject {

class SampleGate {
 public:
  static constexpr int kSlots = 4096;  // power of two
  static constexpr int kProbes = 16;

  // `per_second`: timings per key per second; 0 = every call is timed.
  explicit SampleGate(double per_second);

  // True when the call with `key` (any well-mixed 64-bit hash, never 0) made
  // at `now_ns` should be timed.
  bool should_time(uint64_t key, uint64_t now_ns);

  uint64_t interval_ns() const { return interval_ns_; }

  // Starts fetching the slot where should_time(key, ...) looks first, so
  // that the caller's work in between (reading the clock) overlaps it.
  void prefetch(uint64_t key) const {
    __builtin_prefetch(&slots_[static_cast<uint32_t>(key) & (kSlots - 1)], 1, 3);
  }

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};
    std::atomic<uint64_t> next_ns{0};
  };
  bool take(std::atomic<uint64_t>& next_ns, uint64_t now_ns);

  uint64_t interval_ns_;
  Slot slots_[kSlots];
  std::atomic<uint64_t> overflow_next_ns_{0};
};

// 64-bit mix of up to six values (splitmix64 steps): the key of an operation.
uint64_t sample_key(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0, uint64_t e = 0,
                    uint64_t f = 0);

}  // namespace xpu_timer::inject
