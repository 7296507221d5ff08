// CLOCK_MONOTONIC / CLOCK_REALTIME in nanoseconds. clock_gettime is served by
// the vDSO (no system call), so hooks may call it on every call. Any thread.
#pragma once

#include <time.h>

#include <cstdint>

namespace xpu_timer::inject {

inline uint64_t monotonic_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t realtime_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace xpu_timer::inject
