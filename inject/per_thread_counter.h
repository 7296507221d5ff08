// A count that many threads add to and one reader sums, built for the most
// frequent hooked call (a kernel launch: hundreds to thousands a step, on the
// thread whose work is the step's critical path when the host is the
// bottleneck). Each adding thread counts into a cache line of its own,
// claimed on its first add and found through initial-exec TLS: an add is a
// plain load and store on a line no other thread writes, with no atomic
// read-modify-write and no line bouncing between threads.
//
// Threads: any thread adds, any thread sums. Process-wide: the slots and the
// calling thread's slot pointer are static (there is one such count, the
// kernel launches).
#pragma once

#include <atomic>
#include <cstdint>

namespace xpu_timer::inject {

class PerThreadCounter {
 public:
  // Slots for threads counting at once; a thread beyond them counts into
  // one shared atomic.
  static constexpr unsigned kSlots = 256;

  struct alignas(64) Slot {
    std::atomic<uint64_t> value{0};  // written by the owning thread only
    std::atomic<bool> owned{false};
  };

  // Adds one for the calling thread; returns its slot's count after the add
  // (what a caller samples every n-th call by), or 1 when it counted into
  // the shared overflow.
  static uint64_t add_one() {
    Slot* s = t_slot;
    if (__builtin_expect(s == nullptr, 0)) s = claim();
    if (s == nullptr) {
      overflow_.fetch_add(1, std::memory_order_relaxed);
      return 1;
    }
    const uint64_t n = s->value.load(std::memory_order_relaxed) + 1;
    s->value.store(n, std::memory_order_relaxed);
    return n;
  }
  // Everything counted so far: exact once the counting threads are quiet,
  // else between the totals at the start and at the end of the call. A
  // thread's slot keeps its count when the thread ends (a later thread
  // that claims it adds to it), so the sum never goes back.
  static uint64_t sum();
  // Slots ever claimed: threads that ended gave theirs back for reuse.
  static unsigned slots_claimed() { return used_.load(std::memory_order_acquire); }

 private:
  // The calling thread's slot, claimed now; nullptr when all are owned.
  // Released when the thread ends (a pthread key's destructor).
  static Slot* claim();

  static __thread Slot* t_slot __attribute__((tls_model("initial-exec")));
  static Slot slots_[kSlots];
  static std::atomic<unsigned> used_;  // slots ever claimed (a high-water mark)
  static std::atomic<uint64_t> overflow_;
};

}  // namespace xpu_timer::inject
