// Pools of CUDA start/end event pairs, one pool per device (an event can only
// be recorded on a stream of its own device).
//
// Threads: hooks take() pairs (lock-free while the pool has free pairs; the
// rare growth creates events under a mutex on the calling thread, with that
// device current). The Poller reads a pair's state and gives it back once
// its end event completed. Pairs are never destroyed while the process runs:
// a hook may still hold one when timing is switched off, and destroying CUDA
// events at exit races with the runtime's own teardown.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "inject/bounded_queue.h"

namespace xpu_timer::inject {

// Lifecycle of a pair, written by the hook that took it, read by the Poller.
enum class PairState : uint32_t {
  kFree = 0,
  kRecording = 1,   // start recorded, the real call is still running on the host
  kEnded = 2,       // end recorded after a successful call
  kCallFailed = 3,  // the real call returned an error: nothing to time
  kAbandoned = 4,   // our end-event record failed: nothing to time
};

struct EventPair {
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  std::atomic<uint32_t> state{0};  // PairState
};

class EventPool {
 public:
  static constexpr uint32_t kCapacity = 4096;  // pairs per device, at most
  static constexpr uint32_t kGrowBy = 64;

  explicit EventPool(int device);
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // A free pair and its index; nullptr when none is free and the pool cannot
  // grow. *cuda_error is set to a CUDA error when event creation failed.
  EventPair* take(uint32_t* index, int* cuda_error);
  // Poller only: the pair's events completed (or were never used).
  void give_back(uint32_t index);
  EventPair& pair(uint32_t index) { return pairs_[index]; }
  int device() const { return device_; }
  uint32_t created() const { return created_.load(std::memory_order_relaxed); }

 private:
  int grow();  // returns a cudaError_t value

  const int device_;
  std::unique_ptr<EventPair[]> pairs_;
  BoundedQueue<uint32_t> free_;
  std::mutex grow_mu_;
  std::atomic<uint32_t> created_{0};
};

// EventPool per device; pools are created on first use and never freed.
class EventPools {
 public:
  static constexpr int kMaxDevices = 64;
  constexpr EventPools() = default;
  // Creates the pool on first use (mutex, rare). nullptr for a bad device.
  EventPool* get(int device);
  // Lock-free; nullptr when the pool does not exist.
  EventPool* peek(int device) const;

 private:
  std::mutex create_mu_;
  std::atomic<EventPool*> pools_[kMaxDevices] = {};
};

}  // namespace xpu_timer::inject
