// The clocks every component reads, in one place. CLOCK_MONOTONIC is the
// clock of every time in a status page and a flight-recorder ring (the ranks
// of one host line up on it); CLOCK_REALTIME only says when, for people and
// across hosts. clock_gettime is served by the vDSO (no system call), so hooks
// may call it on every call. Any thread.
#pragma once

#include <time.h>

#include <cstdint>

namespace xpu_timer {

inline uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// CLOCK_MONOTONIC in nanoseconds.
inline uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }

// CLOCK_REALTIME in nanoseconds.
inline uint64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }

// CLOCK_REALTIME in seconds since the epoch.
inline double unix_now_s() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace xpu_timer
