// Memory entry points of the simulated libcudart.so.13. "Device" memory is
// host memory, so copies and memsets really move the bytes (on the stream's
// worker, in stream order) and take a simulated time by size.
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <unordered_set>

#include "tests/simgpu/error_state.h"
#include "tests/simgpu/kernel_launch.h"
#include "tests/simgpu/sim_ext.h"
#include "tests/simgpu/slow_rank.h"
#include "tests/simgpu/stream.h"

namespace sim = xpu_timer::simgpu;

namespace {

// Pointers returned by cudaMalloc / cudaMallocAsync, so that
// cudaPointerGetAttributes can tell device memory from host memory.
std::mutex g_device_mu;
std::unordered_set<const void*>& device_pointers() {
  static auto* set = new std::unordered_set<const void*>();  // never destroyed: used at exit
  return *set;
}

void* allocate(size_t bytes) {
  const size_t rounded = (bytes + 255) / 256 * 256;
  return aligned_alloc(256, rounded);
}

cudaError_t device_allocate(void** ptr, size_t bytes) {
  if (ptr == nullptr) return sim::record_error(cudaErrorInvalidValue);
  if (bytes == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  *ptr = allocate(bytes);
  if (*ptr == nullptr) return sim::record_error(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(g_device_mu);
  device_pointers().insert(*ptr);
  return cudaSuccess;
}

void device_release(void* ptr) {
  if (ptr == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_device_mu);
    device_pointers().erase(ptr);
  }
  free(ptr);
}

bool valid_kind(cudaMemcpyKind kind) {
  return kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice ||
         kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice ||
         kind == cudaMemcpyDefault;
}

cudaError_t enqueue_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                         cudaStream_t handle, bool wait) {
  if (!valid_kind(kind)) return sim::record_error(cudaErrorInvalidMemcpyDirection);
  if (bytes != 0 && (dst == nullptr || src == nullptr)) {
    return sim::record_error(cudaErrorInvalidValue);
  }
  auto stream = sim::StreamRegistry::instance().resolve(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  const uint64_t duration = sim::copy_duration_ns(bytes);
  auto run = sim::kernel_task(duration);
  const bool queued = stream->enqueue([dst, src, bytes, run](uint64_t start) {
    if (bytes != 0) memmove(dst, src, bytes);
    return run(start);
  });
  if (!queued) return sim::record_error(cudaErrorStreamCaptureUnsupported);
  if (wait) stream->wait_idle();
  return cudaSuccess;
}

cudaError_t enqueue_memset(void* dst, int value, size_t bytes, cudaStream_t handle, bool wait) {
  if (bytes != 0 && dst == nullptr) return sim::record_error(cudaErrorInvalidValue);
  auto stream = sim::StreamRegistry::instance().resolve(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  // A memset is a kernel: it runs as slowly as the rank's GPU.
  auto run = sim::kernel_task(sim::scale_ns(sim::copy_duration_ns(bytes) / 4, sim::gpu_factor()));
  const bool queued = stream->enqueue([dst, value, bytes, run](uint64_t start) {
    if (bytes != 0) memset(dst, value, bytes);
    return run(start);
  });
  if (!queued) return sim::record_error(cudaErrorStreamCaptureUnsupported);
  if (wait) stream->wait_idle();
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  XPU_SIM_ENTRY();
  return device_allocate(ptr, bytes);
}

cudaError_t cudaFree(void* ptr) {
  XPU_SIM_ENTRY();
  device_release(ptr);
  return cudaSuccess;
}

// Stream-ordered allocation: the sim allocates at once (the memory is valid
// earlier than CUDA promises, never later).
cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  if (!sim::StreamRegistry::instance().resolve(stream)) {
    return sim::record_error(cudaErrorInvalidResourceHandle);
  }
  return device_allocate(ptr, bytes);
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  auto s = sim::StreamRegistry::instance().resolve(stream);
  if (!s) return sim::record_error(cudaErrorInvalidResourceHandle);
  s->wait_idle();  // freed once the work before it ran
  device_release(ptr);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  XPU_SIM_ENTRY();
  if (ptr == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *ptr = bytes == 0 ? nullptr : allocate(bytes);
  return bytes == 0 || *ptr != nullptr ? cudaSuccess : sim::record_error(cudaErrorMemoryAllocation);
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  XPU_SIM_ENTRY();
  xpu_sim_count_call(XPU_SIM_POINTER_ATTRIBUTES);
  if (attributes == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *attributes = cudaPointerAttributes{};
  bool device = false;
  {
    std::lock_guard<std::mutex> lock(g_device_mu);
    device = device_pointers().count(ptr) != 0;
  }
  attributes->type = device ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
  attributes->device = device ? 0 : -1;
  attributes->devicePointer = device ? const_cast<void*>(ptr) : nullptr;
  attributes->hostPointer = device ? nullptr : const_cast<void*>(ptr);
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  XPU_SIM_ENTRY();
  free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind) {
  XPU_SIM_ENTRY();
  return enqueue_copy(dst, src, bytes, kind, nullptr, /*wait=*/true);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  XPU_SIM_ENTRY();
  return enqueue_copy(dst, src, bytes, kind, stream, /*wait=*/false);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device,
                                size_t bytes, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  if (dst_device < 0 || src_device < 0) return sim::record_error(cudaErrorInvalidDevice);
  return enqueue_copy(dst, src, bytes, cudaMemcpyDeviceToDevice, stream, /*wait=*/false);
}

cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device,
                           size_t bytes) {
  XPU_SIM_ENTRY();
  if (dst_device < 0 || src_device < 0) return sim::record_error(cudaErrorInvalidDevice);
  return enqueue_copy(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr, /*wait=*/true);
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  XPU_SIM_ENTRY();
  return enqueue_memset(dst, value, bytes, nullptr, /*wait=*/true);
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  return enqueue_memset(dst, value, bytes, stream, /*wait=*/false);
}

}  // extern "C"
