#include "inject/sample_gate.h"

#include <initializer_list>

namespace xpu_timer::inject {
namespace {
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t sample_key(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f) {
  uint64_t h = mix(a);
  for (uint64_t v : {b, c, d, e, f}) h = mix(h ^ v);
  return h == 0 ? 1 : h;
}

SampleGate::SampleGate(double per_second)
    : interval_ns_(per_second > 0 ? static_cast<uint64_t>(1e9 / per_second) : 0) {}

bool SampleGate::take(std::atomic<uint64_t>& next_ns, uint64_t now_ns) {
  uint64_t next = next_ns.load(std::memory_order_relaxed);
  if (now_ns < next) return false;
  // One thread wins the window; a loser simply goes untimed this time.
  return next_ns.compare_exchange_strong(next, now_ns + interval_ns_, std::memory_order_relaxed);
}

bool SampleGate::should_time(uint64_t key, uint64_t now_ns) {
  if (interval_ns_ == 0) return true;
  const uint32_t start = static_cast<uint32_t>(key) & (kSlots - 1);
  for (int i = 0; i < kProbes; ++i) {
    Slot& s = slots_[(start + i) & (kSlots - 1)];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == 0) {
      // Claim the empty slot; if another thread claimed it first, look at
      // what it holds (it may be our key).
      if (s.key.compare_exchange_strong(k, key, std::memory_order_acq_rel)) return take(s.next_ns, now_ns);
    }
    if (k == key) return take(s.next_ns, now_ns);
  }
  return take(overflow_next_ns_, now_ns);
}

}  // namespace xpu_timer::inject
