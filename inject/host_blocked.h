// The time the application's threads spent blocked on their GPU inside the
// CUDA runtime: what tells a host that waits for its GPU (a step ahead, its
// launch queue full, or synchronising) from one that its GPU waits for. The
// slow-rank analysis (supervisor/analysis/straggler.h) bounds what a rank
// whose host is late costs by the time its peers' hosts spent so: a peer
// that never waited was just as busy and could not have gone faster.
//
// Counted: every stream, event and device synchronisation and every copy to
// the host (the whole call: into pageable memory, as `.item()` and `.cpu()`
// copy, it returns once the work before it is done), and kernel launches
// through the runtime that found the launch queue full:
// one launch in kLaunchTimedEvery of each thread is timed (two clock reads),
// and one that took kBlockedLaunchNs or more counts kLaunchTimedEvery times
// its time. Not seen: launches inside cuBLAS and NCCL (their own runtime),
// synchronous copies from the host or between GPUs, and spinning on
// cudaEventQuery. Counted though not a wait for the GPU: a thread
// descheduled inside a timed launch (a starved CPU), a kernel's first launch
// loading its module. Threads add up: two waiting at once count twice (the
// analysis never counts more than the time itself). A wait counts when its
// call returns, into the sample of that moment.
//
// Threads: any thread adds; the Poller reads the total into its launch
// samples (common/recorder_ring.h kRecMeasured).
#pragma once

#include <atomic>
#include <cstdint>

namespace xpu_timer::inject {

class HostBlocked {
 public:
  static constexpr uint64_t kLaunchTimedEvery = 16;  // a power of two
  // A launch's own host cost is 2-5 us on the H100 and H200 hosts measured;
  // one of 20 us or more waited for a free slot in the launch queue.
  static constexpr uint64_t kBlockedLaunchNs = 20'000;
  static_assert((kLaunchTimedEvery & (kLaunchTimedEvery - 1)) == 0);

  // Whether the launch that made its thread's count `count` is timed.
  static bool times_launch(uint64_t count) { return (count & (kLaunchTimedEvery - 1)) == 0; }
  static void add_sync(uint64_t ns) { total_.fetch_add(ns, std::memory_order_relaxed); }
  static void add_timed_launch(uint64_t ns) {
    if (ns >= kBlockedLaunchNs) add_sync(ns * kLaunchTimedEvery);
  }
  static uint64_t total_ns() { return total_.load(std::memory_order_relaxed); }

 private:
  static inline std::atomic<uint64_t> total_{0};
};

}  // namespace xpu_timer::inject
