// Maps GPU event times onto the host's CLOCK_MONOTONIC, per device, so that
// the flight recorder's GPU start/end times line up with host launch times
// and with the other ranks of the node.
//
// CUDA gives only differences between two events (cudaEventElapsedTime). An
// anchor event is recorded on a stream of our own (non-blocking, otherwise
// idle, so it completes as soon as it is reached) between two host clock
// reads; the anchor's host time is their midpoint, accurate to half the
// bracket. An event's host time is then anchor + elapsed(anchor, event).
// Anchors are renewed every few seconds: the elapsed time is a float in
// milliseconds, whose resolution decays with the distance to the anchor,
// and the two clocks drift apart slowly. A renewal is tried on a second
// event and replaces the anchor only when its bracket is tight (or tighter
// than the anchor's): a busy host that stretches every try keeps the old
// anchor, a little older, rather than a vague new one. An anchor whose
// bracket was wide (the first one is kept whatever its width) is retried
// every kRetryWideNs.
//
// Threads: the Poller's thread only (it owns the anchor events and streams).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace xpu_timer::inject {

class GpuClock {
 public:
  static constexpr int kMaxDevices = 64;
  static constexpr uint64_t kRenewNs = 5ull * 1000 * 1000 * 1000;
  // A bracket wider than this gives an anchor too vague to keep.
  static constexpr uint64_t kMaxBracketNs = 200ull * 1000;
  static constexpr uint64_t kRetryWideNs = 100ull * 1000 * 1000;

  // Host time of `event` (completed, recorded on `device`, with timing);
  // 0 when no anchor exists for the device or the CUDA calls fail. The
  // caller has made `device` current.
  uint64_t host_ns_of(int device, cudaEvent_t event, uint64_t now_ns);

  // The width of the device's anchor bracket (0: no anchor): its host time
  // is within half of it, and so is every time mapped through it.
  uint64_t bracket_ns(int device) const {
    return device >= 0 && device < kMaxDevices ? anchors_[device].bracket_ns : 0;
  }

 private:
  struct Anchor {
    cudaStream_t stream = nullptr;
    cudaEvent_t event = nullptr;  // the anchor
    cudaEvent_t trial = nullptr;  // a renewal being tried
    uint64_t host_ns = 0;         // 0: no anchor yet
    uint64_t bracket_ns = 0;
    uint64_t taken_ns = 0;  // when it was taken
    uint64_t tried_ns = 0;  // when a renewal was last tried
    bool broken = false;    // the CUDA calls for it failed: give up on this device
  };
  bool renew(Anchor& a, uint64_t now_ns);

  Anchor anchors_[kMaxDevices];
};

}  // namespace xpu_timer::inject
