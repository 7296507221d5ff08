// Memory entry points of the simulated libcudart.so.13. "Device" memory is
// host memory, so copies and memsets really move the bytes (on the stream's
// worker, in stream order) and take a simulated time by size.
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "tests/simgpu/error_state.h"
#include "tests/simgpu/kernel_launch.h"
#include "tests/simgpu/stream.h"

namespace sim = xpu_timer::simgpu;

namespace {

void* allocate(size_t bytes) {
  const size_t rounded = (bytes + 255) / 256 * 256;
  return aligned_alloc(256, rounded);
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
  auto run = sim::kernel_task(sim::copy_duration_ns(bytes) / 4);
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
  if (ptr == nullptr) return sim::record_error(cudaErrorInvalidValue);
  if (bytes == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  *ptr = allocate(bytes);
  return *ptr != nullptr ? cudaSuccess : sim::record_error(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void* ptr) {
  free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) { return cudaMalloc(ptr, bytes); }

cudaError_t cudaFreeHost(void* ptr) {
  free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind) {
  return enqueue_copy(dst, src, bytes, kind, nullptr, /*wait=*/true);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return enqueue_copy(dst, src, bytes, kind, stream, /*wait=*/false);
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  return enqueue_memset(dst, value, bytes, nullptr, /*wait=*/true);
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  return enqueue_memset(dst, value, bytes, stream, /*wait=*/false);
}

}  // extern "C"
