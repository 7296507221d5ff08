#include "inject/per_thread_counter.h"

#include <pthread.h>

namespace xpu_timer::inject {

__thread PerThreadCounter::Slot* PerThreadCounter::t_slot = nullptr;
PerThreadCounter::Slot PerThreadCounter::slots_[PerThreadCounter::kSlots];
std::atomic<unsigned> PerThreadCounter::used_{0};
std::atomic<uint64_t> PerThreadCounter::overflow_{0};

namespace {
// Gives an ending thread's slot back (its count stays in the sum).
void release_slot(void* slot) {
  static_cast<PerThreadCounter::Slot*>(slot)->owned.store(false, std::memory_order_release);
}
pthread_key_t slot_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k{};
    return pthread_key_create(&k, release_slot) == 0 ? k : static_cast<pthread_key_t>(-1);
  }();
  return key;
}
}  // namespace

PerThreadCounter::Slot* PerThreadCounter::claim() {
  const pthread_key_t key = slot_key();
  if (key == static_cast<pthread_key_t>(-1)) return nullptr;  // no release: never own one
  for (unsigned i = 0; i < kSlots; ++i) {
    Slot& s = slots_[i];
    if (s.owned.load(std::memory_order_relaxed) ||
        s.owned.exchange(true, std::memory_order_acquire)) {
      continue;
    }
    if (pthread_setspecific(key, &s) != 0) {
      s.owned.store(false, std::memory_order_release);
      return nullptr;
    }
    unsigned used = used_.load(std::memory_order_relaxed);
    while (used < i + 1 && !used_.compare_exchange_weak(used, i + 1, std::memory_order_release)) {
    }
    t_slot = &s;
    return &s;
  }
  return nullptr;
}

uint64_t PerThreadCounter::sum() {
  uint64_t total = overflow_.load(std::memory_order_relaxed);
  const unsigned used = used_.load(std::memory_order_acquire);
  for (unsigned i = 0; i < used && i < kSlots; ++i) {
    total += slots_[i].value.load(std::memory_order_relaxed);
  }
  return total;
}

}  // namespace xpu_timer::inject
