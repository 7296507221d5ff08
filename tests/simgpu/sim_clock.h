// CLOCK_MONOTONIC helpers shared by the simulated libraries (header-only so
// each library has its own copy and none exports it).
#pragma once

#include <errno.h>
#include <stdint.h>
#include <time.h>

namespace xpu_timer::simgpu {

inline uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // cannot fail for CLOCK_MONOTONIC
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Sleeping to an absolute deadline (not a relative duration) keeps simulated
// kernel times exact however late the worker thread was scheduled.
inline void sleep_until_ns(uint64_t deadline_ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1000000000ull);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1000000000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

inline void sleep_for_ns(uint64_t ns) { sleep_until_ns(now_ns() + ns); }

}  // namespace xpu_timer::simgpu
