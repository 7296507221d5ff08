#include "inject/gpu_clock.h"

#include <utility>

#include "common/clock.h"
#include "inject/cuda_runtime_calls.h"

namespace xpu_timer::inject {

bool GpuClock::renew(Anchor& a, uint64_t now_ns) {
  const CudaRuntimeCalls& cuda = cuda_calls();
  if (cuda.stream_create_with_flags == nullptr || cuda.event_synchronize == nullptr) {
    a.broken = true;
    return false;
  }
  if (a.stream == nullptr) {
    if (cuda.stream_create_with_flags(&a.stream, cudaStreamNonBlocking) != cudaSuccess ||
        cuda.event_create_with_flags(&a.event, cudaEventDefault) != cudaSuccess ||
        cuda.event_create_with_flags(&a.trial, cudaEventDefault) != cudaSuccess) {
      cuda.get_last_error();
      a.broken = true;
      return false;
    }
  }
  a.tried_ns = now_ns;
  // A few tries for a tight bracket; a busy host may preempt us in between.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const uint64_t before = monotonic_ns();
    if (cuda.event_record(a.trial, a.stream) != cudaSuccess ||
        cuda.event_synchronize(a.trial) != cudaSuccess) {
      cuda.get_last_error();
      a.broken = true;
      return false;
    }
    const uint64_t bracket = monotonic_ns() - before;
    if (a.host_ns == 0 || bracket <= kMaxBracketNs || bracket < a.bracket_ns) {
      std::swap(a.event, a.trial);  // the trial becomes the anchor
      a.host_ns = before + bracket / 2;
      a.bracket_ns = bracket;
      a.taken_ns = now_ns;
      if (bracket <= kMaxBracketNs) return true;
    }
  }
  return a.host_ns != 0;
}

uint64_t GpuClock::host_ns_of(int device, cudaEvent_t event, uint64_t now_ns) {
  if (device < 0 || device >= kMaxDevices) return 0;
  Anchor& a = anchors_[device];
  if (a.broken) return 0;
  const bool due = a.host_ns == 0 || now_ns - a.taken_ns > kRenewNs ||
                   (a.bracket_ns > kMaxBracketNs && now_ns - a.tried_ns > kRetryWideNs);
  if (due && !renew(a, now_ns) && a.host_ns == 0) return 0;
  float ms = 0;
  if (cuda_calls().event_elapsed_time(&ms, a.event, event) != cudaSuccess) {
    cuda_calls().get_last_error();
    return 0;
  }
  const double t = static_cast<double>(a.host_ns) + static_cast<double>(ms) * 1e6;
  return t > 0 ? static_cast<uint64_t>(t) : 0;
}

}  // namespace xpu_timer::inject
