// Maps GPU event times onto the host's CLOCK_MONOTONIC, per device, so that
// the flight recorder's GPU start/end times line up with host launch times
// and with the other ranks of the node.
//
// CUDA gives only differences between two events (cudaEventElapsedTime).
// The clock takes as its reference the start event of an operation the job
// already ran (the Poller keeps that event pair out of the pool while it is
// the reference) and bounds the reference's host time R from what every
// completed operation tells:
//   - its start event was recorded at launch_ns, so it completed no earlier:
//       R >= launch_ns - elapsed(ref, start)        (tight when the GPU was idle)
//   - a query at seen_ns found one of its events complete:
//       R <= seen_ns - elapsed(ref, event)          (tight when the Poller looked
//                                                    just after it completed)
// The estimate is the upper bound less a small slack, never below the lower
// bound (see estimate()). An event's host time is R + elapsed(ref, event).
// Every kRenewNs a newer operation becomes the reference (the elapsed time is
// a float in milliseconds, whose resolution decays with distance), the
// bounds carried over through elapsed(old, new). Bounds that cross (the two
// clocks drifted, or a reading was wrong) start again from the newest
// operation.
//
// Why not an anchor event on a stream of our own, recorded between two host
// clock reads (the previous design): on an H100 the mere use of a second
// stream of ours, once, slowed a GPU-bound GPT-2 step by 1% for the rest of
// the job (bench/results/2026-11-25-gpu-clock-h100x1.md). This clock adds no
// CUDA work at all: only elapsed-time queries on the Poller's thread.
//
// Threads: the Poller's thread only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace xpu_timer::inject {

class GpuClock {
 public:
  static constexpr int kMaxDevices = 64;
  static constexpr uint64_t kRenewNs = 5ull * 1000 * 1000 * 1000;
  // The estimate sits this far below the upper bound when the bounds allow:
  // the least time between an event's completion and a query that sees it
  // (a query and a clock read).
  static constexpr uint64_t kQuerySlackNs = 2'000;
  static constexpr uint32_t kNoToken = UINT32_MAX;

  // One completed operation of `device` (current on the calling thread).
  struct Observation {
    cudaEvent_t start = nullptr;  // recorded at launch_ns, completed
    uint64_t launch_ns = 0;
    uint32_t token = kNoToken;  // names the start event's pair (the caller's)
    cudaEvent_t end = nullptr;  // completed end event, or null (then start is `seen`)
    uint64_t end_after_start_ns = 0;  // when end is null: its time after start, if known
    uint64_t seen_ns = 0;  // a clock read after the query found `end` (or start) complete
  };
  struct Mapped {
    uint64_t start_ns = 0;  // 0: unknown (no reference, or a CUDA call failed)
    uint64_t end_ns = 0;
    // The pair the caller must keep (it became the reference) or may give
    // back (it stopped being the reference); kNoToken for none.
    uint32_t keep = kNoToken;
    uint32_t give_back = kNoToken;
  };

  // Tightens the device's mapping with `o` and maps its start (and end).
  Mapped observe(int device, const Observation& o);

  // The width of the device's bounds (0: no reference yet): the estimate is
  // within it of the truth.
  uint64_t bracket_ns(int device) const;

  // The reference pair of `device` (kNoToken: none), for the caller to give
  // back when it discards its pool.
  uint32_t reference_token(int device) const {
    return device >= 0 && device < kMaxDevices ? refs_[device].token : kNoToken;
  }

 private:
  struct Reference {
    cudaEvent_t event = nullptr;  // nullptr: none yet
    uint32_t token = kNoToken;
    uint64_t taken_ns = 0;  // host time when it was adopted
    // Bounds of the reference's host time, as signed ns so that a lower bound
    // below zero (early in a run) stays exact.
    int64_t lower = INT64_MIN;
    int64_t upper = INT64_MAX;
    bool broken = false;  // an elapsed-time query failed: give up on this device
  };
  static int64_t estimate(const Reference& r);
  // elapsed(from, to) in ns; false when the query failed.
  static bool elapsed_ns(cudaEvent_t from, cudaEvent_t to, int64_t* ns);

  Reference refs_[kMaxDevices];
};

}  // namespace xpu_timer::inject
