#include "inject/gpu_clock.h"

#include <algorithm>
#include <cmath>

#include "inject/cuda_runtime_calls.h"

namespace xpu_timer::inject {

bool GpuClock::elapsed_ns(cudaEvent_t from, cudaEvent_t to, int64_t* ns) {
  if (from == to) {
    *ns = 0;
    return true;
  }
  float ms = 0;
  if (cuda_calls().event_elapsed_time(&ms, from, to) != cudaSuccess) {
    cuda_calls().get_last_error();  // ours, not the application's
    return false;
  }
  *ns = std::llround(static_cast<double>(ms) * 1e6);
  return true;
}

int64_t GpuClock::estimate(const Reference& r) {
  if (r.upper == INT64_MAX) return r.lower;
  return std::max(r.lower, r.upper - static_cast<int64_t>(kQuerySlackNs));
}

uint64_t GpuClock::bracket_ns(int device) const {
  if (device < 0 || device >= kMaxDevices) return 0;
  const Reference& r = refs_[device];
  if (r.event == nullptr || r.lower == INT64_MIN || r.upper == INT64_MAX) return 0;
  return static_cast<uint64_t>(r.upper - r.lower);
}

GpuClock::Mapped GpuClock::observe(int device, const Observation& o) {
  Mapped m;
  if (device < 0 || device >= kMaxDevices || o.start == nullptr) return m;
  Reference& r = refs_[device];
  if (r.broken) return m;
  if (r.event == nullptr) {  // the first operation of the device: its start is the reference
    if (o.token == kNoToken) return m;  // its pair would be reused under us
    r.event = o.start;
    r.token = o.token;
    r.taken_ns = o.seen_ns;
    m.keep = o.token;
  }
  int64_t to_start = 0;  // elapsed(reference, this start)
  int64_t to_end = 0;    // elapsed(reference, this end)
  if (!elapsed_ns(r.event, o.start, &to_start) ||
      (o.end != nullptr && !elapsed_ns(r.event, o.end, &to_end))) {
    r.broken = true;
    return m;
  }
  if (o.end == nullptr) to_end = to_start + static_cast<int64_t>(o.end_after_start_ns);

  // A newer reference every kRenewNs: the bounds move with it.
  if (o.token != kNoToken && o.token != r.token && o.seen_ns - r.taken_ns > kRenewNs) {
    if (r.lower != INT64_MIN) r.lower += to_start;
    if (r.upper != INT64_MAX) r.upper += to_start;
    m.give_back = r.token;
    m.keep = o.token;
    r.event = o.start;
    r.token = o.token;
    r.taken_ns = o.seen_ns;
    to_end -= to_start;
    to_start = 0;
  }

  const int64_t lower = static_cast<int64_t>(o.launch_ns) - to_start;
  const int64_t upper = static_cast<int64_t>(o.seen_ns) - to_end;
  if (lower > upper) return m;  // a wrong reading (seen before launch): it bounds nothing
  if (lower > r.upper || upper < r.lower) {
    // The bounds crossed: the clocks drifted apart since the old bounds were
    // set (or one was wrong). Start again from this operation.
    r.lower = lower;
    r.upper = upper;
  } else {
    r.lower = std::max(r.lower, lower);
    r.upper = std::min(r.upper, upper);
  }
  const int64_t at = estimate(r);
  m.start_ns = at + to_start > 0 ? static_cast<uint64_t>(at + to_start) : 0;
  m.end_ns = at + to_end > 0 ? static_cast<uint64_t>(at + to_end) : 0;
  return m;
}

}  // namespace xpu_timer::inject
