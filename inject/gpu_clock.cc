#include "inject/gpu_clock.h"

#include "inject/clock.h"
#include "inject/cuda_runtime_calls.h"

namespace xpu_timer::inject {

bool GpuClock::renew(int /*device*/, Anchor& a, uint64_t now_ns) {
  const CudaRuntimeCalls& cuda = cuda_calls();
  if (cuda.stream_create_with_flags == nullptr || cuda.event_synchronize == nullptr) {
    a.broken = true;
    return false;
  }
  if (a.stream == nullptr) {
    if (cuda.stream_create_with_flags(&a.stream, cudaStreamNonBlocking) != cudaSuccess ||
        cuda.event_create_with_flags(&a.event, cudaEventDefault) != cudaSuccess) {
      cuda.get_last_error();
      a.broken = true;
      return false;
    }
  }
  // A few tries for a tight bracket; a busy host may preempt us in between.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const uint64_t before = monotonic_ns();
    if (cuda.event_record(a.event, a.stream) != cudaSuccess ||
        cuda.event_synchronize(a.event) != cudaSuccess) {
      cuda.get_last_error();
      a.broken = true;
      return false;
    }
    const uint64_t after = monotonic_ns();
    if (after - before <= kMaxBracketNs || a.host_ns == 0) {
      a.host_ns = before + (after - before) / 2;
      a.taken_ns = now_ns;
      if (after - before <= kMaxBracketNs) return true;
    }
  }
  return a.host_ns != 0;
}

uint64_t GpuClock::host_ns_of(int device, cudaEvent_t event, uint64_t now_ns) {
  if (device < 0 || device >= kMaxDevices) return 0;
  Anchor& a = anchors_[device];
  if (a.broken) return 0;
  if ((a.host_ns == 0 || now_ns - a.taken_ns > kRenewNs) && !renew(device, a, now_ns) &&
      a.host_ns == 0) {
    return 0;
  }
  float ms = 0;
  if (cuda_calls().event_elapsed_time(&ms, a.event, event) != cudaSuccess) {
    cuda_calls().get_last_error();
    return 0;
  }
  const double t = static_cast<double>(a.host_ns) + static_cast<double>(ms) * 1e6;
  return t > 0 ? static_cast<uint64_t>(t) : 0;
}

}  // namespace xpu_timer::inject
