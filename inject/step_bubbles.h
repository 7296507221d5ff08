// How much of each training step a rank's GPU spent idle: the pipeline
// bubble, measured rather than computed from a schedule.
//
// The Poller feeds it the GPU intervals (host clock) of the timed matrix
// products and copies as they complete, the launch times of those completed
// without a timing, and each step's window [start, end] (inject/nvtx_ranges.h).
// A window is settled once every operation launched before its end has been
// accounted: the Poller passes a horizon (no operation launched before it is
// still unaccounted), and windows ending at or before it are measured:
// busy = the length of the union of the intervals clipped to the window,
// idle = window - busy.
//
// What counts as busy: matrix products and copies only. Collectives and
// point-to-point transfers count as waiting (a pipeline stage spends its
// bubble in a receive), and so do kernels we do not time (elementwise,
// attention, ...): the idle fraction is an upper bound, exact for a step
// whose GPU work is all GEMMs and copies. Every such operation must be timed
// (XPU_TIMER_SAMPLE_PER_SEC=0); those that were not are counted per window
// so the reader knows the bound is loose.
//
// Threads: the Poller's only. Bounded memory: at most kMaxIntervals kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

namespace xpu_timer::inject {

class StepBubbles {
 public:
  static constexpr size_t kMaxIntervals = 1 << 16;
  static constexpr size_t kMaxPendingSteps = 64;

  struct Measured {
    uint64_t token;      // as given to add_step (the step's flight-recorder record)
    uint64_t window_ns;  // end - start
    uint64_t busy_ns;    // union of GEMM and copy GPU time within the window
    uint64_t untimed;    // GEMMs and copies launched in the window without a timing
  };

  void add_busy(uint64_t start_ns, uint64_t end_ns);
  void add_untimed(uint64_t launch_ns);
  void add_step(uint64_t start_ns, uint64_t end_ns, uint64_t token);

  // Measures every pending window ending at or before `horizon_ns`, oldest
  // first, through done(const Measured&); forgets what no later window needs.
  template <typename F>
  void settle(uint64_t horizon_ns, F&& done) {
    while (!steps_.empty() && steps_.front().end <= horizon_ns) {
      done(measure(steps_.front()));
      if (steps_.front().end > settled_until_) settled_until_ = steps_.front().end;
      steps_.pop_front();
    }
    prune();
  }

  size_t pending_steps() const { return steps_.size(); }
  size_t intervals() const { return busy_.size(); }

 private:
  struct Window {
    uint64_t start, end, token;
  };
  Measured measure(const Window& w) const;
  void prune();

  std::deque<std::pair<uint64_t, uint64_t>> busy_;  // [start, end], completion order
  std::deque<uint64_t> untimed_;                    // launch times
  std::deque<Window> steps_;
  uint64_t settled_until_ = 0;  // end of the last measured window
};

}  // namespace xpu_timer::inject
