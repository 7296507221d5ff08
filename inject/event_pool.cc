#include "inject/event_pool.h"

#include "inject/cuda_runtime_calls.h"

namespace xpu_timer::inject {

EventPool::EventPool(int device)
    : device_(device), pairs_(new EventPair[kCapacity]), free_(kCapacity) {}

EventPair* EventPool::take(uint32_t* index, int* cuda_error) {
  *cuda_error = cudaSuccess;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (free_.try_pop(index)) return &pairs_[*index];
    if (attempt == 0) {
      const int err = grow();
      if (err != cudaSuccess) {
        *cuda_error = err;
        return nullptr;
      }
    }
  }
  return nullptr;
}

void EventPool::give_back(uint32_t index) {
  pairs_[index].state.store(static_cast<uint32_t>(PairState::kFree), std::memory_order_relaxed);
  // Cannot fail: the queue holds kCapacity indices and only kCapacity exist.
  free_.try_push(index);
}

int EventPool::grow() {
  std::lock_guard<std::mutex> lock(grow_mu_);
  const uint32_t have = created_.load(std::memory_order_relaxed);
  if (have >= kCapacity) return cudaSuccess;  // full: the caller goes untimed
  const CudaRuntimeCalls& cuda = cuda_calls();
  // Events belong to the device current at creation: switch to ours if the
  // caller's differs (a multi-GPU process issuing NCCL calls for other devices).
  int previous = -1;
  cudaError_t err = cuda.get_device(&previous);
  if (err != cudaSuccess) return err;
  if (previous != device_ && (err = cuda.set_device(device_)) != cudaSuccess) return err;
  uint32_t made = 0;
  for (; made < kGrowBy && have + made < kCapacity; ++made) {
    EventPair& p = pairs_[have + made];
    err = cuda.event_create_with_flags(&p.start, cudaEventDefault);
    if (err != cudaSuccess) break;
    err = cuda.event_create_with_flags(&p.end, cudaEventDefault);
    if (err != cudaSuccess) {
      cuda.event_destroy(p.start);
      p.start = nullptr;
      break;
    }
  }
  if (previous != device_) cuda.set_device(previous);
  if (err != cudaSuccess) cuda.get_last_error();  // not the user's error to see
  for (uint32_t i = 0; i < made; ++i) free_.try_push(have + i);
  created_.store(have + made, std::memory_order_relaxed);
  return made > 0 ? cudaSuccess : err;
}

EventPool* EventPools::get(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  EventPool* pool = pools_[device].load(std::memory_order_acquire);
  if (pool != nullptr) return pool;
  std::lock_guard<std::mutex> lock(create_mu_);
  pool = pools_[device].load(std::memory_order_relaxed);
  if (pool == nullptr) {
    try {
      pool = new EventPool(device);
    } catch (...) {  // out of memory: this call goes untimed, a later one retries
      return nullptr;
    }
    pools_[device].store(pool, std::memory_order_release);
  }
  return pool;
}

EventPool* EventPools::peek(int device) const {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  return pools_[device].load(std::memory_order_acquire);
}

}  // namespace xpu_timer::inject
