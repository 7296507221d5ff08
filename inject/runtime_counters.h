// Counters of CUDA runtime calls that are counted on every call and never
// timed (inject/hooks_cudart.cc): kernel launches, device allocations and
// frees. Published by the Poller into the status page's `runtime`.
//
// Threads: any user thread adds, the Poller sums. A kernel launch is the
// most frequent call we see (hundreds to thousands per step, often from two
// threads: PyTorch's forward and autograd threads), on a thread whose own
// work is the step's critical path when the host is the bottleneck: each
// launching thread counts into a line of its own (inject/per_thread_counter.h).
#pragma once

#include <atomic>
#include <cstdint>

#include "common/status_page_layout.h"
#include "inject/host_blocked.h"
#include "inject/per_thread_counter.h"

namespace xpu_timer::inject {

struct RuntimeCallCounters {
  // kernel_launches: PerThreadCounter (process-wide).
  // Allocations are rare (PyTorch's caching allocator calls cudaMalloc when
  // its cache misses): plain atomics.
  std::atomic<uint64_t> mallocs{0};
  std::atomic<uint64_t> malloc_bytes{0};
  std::atomic<uint64_t> frees{0};
  std::atomic<uint64_t> free_bytes{0};

  proto::RuntimeCounters snapshot() const {
    proto::RuntimeCounters c{};
    c.kernel_launches = PerThreadCounter::sum();
    c.mallocs = mallocs.load(std::memory_order_relaxed);
    c.malloc_bytes = malloc_bytes.load(std::memory_order_relaxed);
    c.frees = frees.load(std::memory_order_relaxed);
    c.free_bytes = free_bytes.load(std::memory_order_relaxed);
    c.host_blocked_ns = HostBlocked::total_ns();
    return c;
  }
};

// Filled by the Python probes (inject/python_probes.h) from the thread that
// runs the collection or the DataLoader; rare events: plain atomics.
struct PythonCallCounters {
  std::atomic<uint32_t> probes{0};  // proto::kPythonProbe*
  std::atomic<uint64_t> gc_collections[3] = {};
  std::atomic<uint64_t> gc_pause_ns[3] = {};
  std::atomic<uint64_t> gc_collected[3] = {};
  std::atomic<uint64_t> loader_batches{0};
  std::atomic<uint64_t> loader_wait_ns{0};

  proto::PythonCounters snapshot() const {
    proto::PythonCounters c{};
    c.probes = probes.load(std::memory_order_relaxed);
    for (int g = 0; g < 3; ++g) {
      c.gc_collections[g] = gc_collections[g].load(std::memory_order_relaxed);
      c.gc_pause_ns[g] = gc_pause_ns[g].load(std::memory_order_relaxed);
      c.gc_collected[g] = gc_collected[g].load(std::memory_order_relaxed);
    }
    c.loader_batches = loader_batches.load(std::memory_order_relaxed);
    c.loader_wait_ns = loader_wait_ns.load(std::memory_order_relaxed);
    return c;
  }
};

}  // namespace xpu_timer::inject
