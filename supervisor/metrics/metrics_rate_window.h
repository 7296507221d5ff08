// Recent-window deltas of a metric slot's running totals, for the gauges
// that Prometheus users read directly (achieved GEMM FLOP/s, NCCL algorithm
// and bus bandwidth). The counters stay the exact source: these gauges are
// a convenience over the window, defined as
//   delta(totals) between now and the newest sample taken at least
//   `window` ago (or the series' start when no sample is that old).
// A sample is kept at most every window/8, so memory per series is bounded
// (about ten samples) and any number of scrapers may call in: the window is
// a time, not "since the previous scrape".
//
// Threads: not thread-safe; MetricsExporter calls it under its mutex.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace xpu_timer::supervisor {

class RateWindow {
 public:
  struct Totals {
    uint64_t count = 0;
    uint64_t sum_ns = 0;
    uint64_t sum_bytes = 0;
    uint64_t sum_flops = 0;
  };

  explicit RateWindow(uint64_t window_ns) : window_ns_(window_ns) {}

  // The series is (rank, slot index) of process `pid`; `identity` is the
  // slot's key (a new process or another key at that index starts afresh).
  // Records `now` and returns what changed over the window.
  Totals delta(int rank, pid_t pid, uint32_t index, uint64_t identity, const Totals& now,
               uint64_t now_ns);

  // Forgets series not seen since now_ns - keep_ns (ranks that went away).
  void sweep(uint64_t now_ns, uint64_t keep_ns);
  size_t series() const { return series_.size(); }
  uint64_t window_ns() const { return window_ns_; }

 private:
  struct Sample {
    uint64_t t_ns;
    Totals totals;
  };
  struct Series {
    pid_t pid = 0;
    uint64_t identity = 0;
    uint64_t last_seen_ns = 0;
    std::vector<Sample> samples;  // oldest first
  };

  const uint64_t window_ns_;
  std::unordered_map<uint64_t, Series> series_;
};

}  // namespace xpu_timer::supervisor
