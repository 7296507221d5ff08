#include "inject/step_bubbles.h"

#include <algorithm>
#include <vector>

namespace xpu_timer::inject {

void StepBubbles::add_busy(uint64_t start_ns, uint64_t end_ns) {
  if (start_ns == 0 || end_ns <= start_ns || end_ns <= settled_until_) return;
  if (busy_.size() >= kMaxIntervals) busy_.pop_front();
  busy_.emplace_back(start_ns, end_ns);
}

void StepBubbles::add_untimed(uint64_t launch_ns) {
  if (launch_ns < settled_until_) return;
  if (untimed_.size() >= kMaxIntervals) untimed_.pop_front();
  untimed_.push_back(launch_ns);
}

void StepBubbles::add_step(uint64_t start_ns, uint64_t end_ns, uint64_t token) {
  if (end_ns <= start_ns) return;
  if (steps_.size() >= kMaxPendingSteps) steps_.pop_front();  // never settled: forget it
  steps_.push_back(Window{start_ns, end_ns, token});
}

StepBubbles::Measured StepBubbles::measure(const Window& w) const {
  std::vector<std::pair<uint64_t, uint64_t>> in;
  for (const auto& [s, e] : busy_) {
    if (e <= w.start || s >= w.end) continue;
    in.emplace_back(std::max(s, w.start), std::min(e, w.end));
  }
  std::sort(in.begin(), in.end());
  uint64_t busy = 0, covered_to = w.start;
  for (const auto& [s, e] : in) {
    const uint64_t from = std::max(s, covered_to);
    if (e > from) {
      busy += e - from;
      covered_to = e;
    }
  }
  uint64_t untimed = 0;
  for (uint64_t t : untimed_) untimed += t >= w.start && t < w.end;
  return Measured{w.token, w.end - w.start, busy, untimed};
}

void StepBubbles::prune() {
  // Steps follow each other: what ends before the last measured window's end
  // cannot count again, nor what ends before every pending window.
  uint64_t keep_from = settled_until_;
  if (!steps_.empty()) {
    uint64_t first_start = UINT64_MAX;
    for (const Window& w : steps_) first_start = std::min(first_start, w.start);
    keep_from = std::max(keep_from, first_start);
  }
  while (!busy_.empty() && busy_.front().second <= keep_from) busy_.pop_front();
  while (!untimed_.empty() && untimed_.front() < keep_from) untimed_.pop_front();
}

}  // namespace xpu_timer::inject
