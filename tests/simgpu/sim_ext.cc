// The xpu_sim_* extension exported by the simulated libcudart.so.13 (see sim_ext.h).
#include "tests/simgpu/sim_ext.h"

#include <atomic>

#include "tests/simgpu/kernel_launch.h"
#include "tests/simgpu/sim_clock.h"
#include "tests/simgpu/stream.h"

namespace sim = xpu_timer::simgpu;

namespace {
std::atomic<uint64_t> g_counted_calls[XPU_SIM_COUNTED_CALLS];
}  // namespace

extern "C" {

void xpu_sim_count_call(int which) {
  if (which >= 0 && which < XPU_SIM_COUNTED_CALLS) {
    g_counted_calls[which].fetch_add(1, std::memory_order_relaxed);
  }
}

uint64_t xpu_sim_call_count(int which) {
  return which >= 0 && which < XPU_SIM_COUNTED_CALLS
             ? g_counted_calls[which].load(std::memory_order_relaxed)
             : 0;
}

uint64_t xpu_sim_now_ns(void) { return sim::now_ns(); }

void xpu_sim_sleep_until_ns(uint64_t deadline_ns) { sim::sleep_until_ns(deadline_ns); }

cudaError_t xpu_sim_launch_kernel(cudaStream_t handle, uint64_t duration_ns) {
  auto stream = sim::StreamRegistry::instance().resolve(handle);
  if (!stream) return cudaErrorInvalidResourceHandle;
  sim::launch_kernel(*stream, duration_ns);
  return cudaSuccess;
}

cudaError_t xpu_sim_enqueue_task(cudaStream_t handle, xpu_sim_task_fn fn, void* arg,
                                 void (*destroy)(void*), int* dropped) {
  if (dropped != nullptr) *dropped = 0;
  auto stream = sim::StreamRegistry::instance().resolve(handle);
  if (!stream || fn == nullptr) {
    if (destroy != nullptr) destroy(arg);
    return stream ? cudaErrorInvalidValue : cudaErrorInvalidResourceHandle;
  }
  const bool queued = stream->enqueue([fn, arg, destroy](uint64_t start) {
    const uint64_t end = fn(arg, start);
    if (destroy != nullptr) destroy(arg);
    return end;
  });
  if (!queued) {
    if (destroy != nullptr) destroy(arg);
    if (dropped != nullptr) *dropped = 1;
  }
  return cudaSuccess;
}

int xpu_sim_stream_is_capturing(cudaStream_t handle) {
  auto stream = sim::StreamRegistry::instance().resolve(handle);
  return stream && stream->capturing(nullptr) ? 1 : 0;
}

uint64_t xpu_sim_captured_kernel_count(void) { return sim::captured_kernel_count(); }

}  // extern "C"
