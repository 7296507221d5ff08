// Slow ranks as the supervisor runs them: it hands the records the ring feed
// (ranks/ring_feed.h) finds final to the straggler analysis
// (analysis/straggler.h), once a second takes its verdict, logs one line when
// a straggler appears and one when it clears, and keeps the verdict for
// GET /slow and /metrics. It reads only what the ranks' flight recorders
// already hold: no collective, no CUDA call, nothing on the ranks' threads.
//
// In a job of several nodes (a JobView) the verdict is job-wide: every
// kSummaryPeriodNs this node offers its window summary to the view and joins
// the other nodes' (analysis/slow_summary.h), so that every node names the
// same stragglers by global rank and node.
//
// Threads: poll() and on_ring_read() on the asio thread; published() from
// any thread (HTTP).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "supervisor/analysis/rank_sample.h"
#include "supervisor/analysis/straggler.h"
#include "supervisor/ranks/ring_feed.h"

namespace xpu_timer::supervisor {

class JobView;

class SlowRankMonitor : public RingConsumer {
 public:
  static constexpr uint64_t kAnalysisPeriodNs = 1'000'000'000;

  static constexpr uint64_t kSummaryPeriodNs = 5'000'000'000;

  // `job_view`: the other nodes (nullptr: this node alone); must outlive this.
  SlowRankMonitor(StragglerOptions options, JobView* job_view = nullptr);

  // The records a read of a rank's ring found final, to the analyzer.
  void on_ring_read(const RingRead& read) override;
  // The pages' communicators of this poll, and the verdict once a period;
  // `node` and `world_size` of this node's ranks (-1, 0: none registered).
  void poll(const Snapshot& snap, int node = -1, int world_size = 0);
  std::shared_ptr<const SlowReport> published() const;
  // Asio thread: the window of the analysis (--slow-window), from the next
  // verdict on.
  void set_window_s(double window_s) { analyzer_.set_window_s(window_s); }

 private:
  void announce(const SlowReport& report);
  // This node's report joined with the other nodes' summaries.
  SlowReport job_wide(const SlowReport& mine, int node, int world_size, uint64_t now_ns);

  JobView* const job_view_;
  uint64_t offered_ns_ = 0;
  std::set<std::string> refused_;  // summaries said to be refused, by node and reason
  StragglerAnalyzer analyzer_;
  uint64_t analyzed_ns_ = 0;
  double cpu_s_ = 0;                    // this thread's CPU time in poll() and on_ring_read()
  std::map<int, Straggler> announced_;  // rank -> as last logged
  mutable std::mutex mutex_;
  std::shared_ptr<const SlowReport> published_;
};

}  // namespace xpu_timer::supervisor
