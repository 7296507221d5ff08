#include "inject/step_bubbles.h"

#include <gtest/gtest.h>

#include <vector>

namespace xpu_timer::inject {
namespace {

std::vector<StepBubbles::Measured> settle(StepBubbles& b, uint64_t horizon) {
  std::vector<StepBubbles::Measured> out;
  b.settle(horizon, [&](const StepBubbles::Measured& m) { out.push_back(m); });
  return out;
}

TEST(StepBubbles, BusyIsTheUnionOfIntervalsClippedToTheWindow) {
  StepBubbles b;
  b.add_busy(100, 200);  // overlaps the next one (two streams)
  b.add_busy(150, 300);
  b.add_busy(400, 450);
  b.add_busy(950, 1100);  // half inside
  b.add_busy(50, 90);     // before the window
  b.add_untimed(500);
  b.add_untimed(1500);  // after it
  b.add_step(100, 1000, 7);
  EXPECT_TRUE(settle(b, 999).empty());  // not every operation before its end is accounted
  const auto m = settle(b, 1000);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].token, 7u);
  EXPECT_EQ(m[0].window_ns, 900u);
  EXPECT_EQ(m[0].busy_ns, 200u + 50u + 50u);
  EXPECT_EQ(m[0].untimed, 1u);
}

TEST(StepBubbles, OneFOneBClosedForm) {
  // p stages, m micro-batches, forward f, backward 2f, no transfer time: the
  // 1F1B schedule leaves (p - 1) / (m + p - 1) of each stage's period idle.
  constexpr uint64_t f = 1000, b = 2000;
  constexpr int p = 4, m = 8;
  for (int stage = 0; stage < p; ++stage) {
    StepBubbles bubbles;
    // Slot i of a stage's period: its GEMMs, stage-shifted as 1F1B runs them.
    // Stage s works m*(f+b) of each period (m+p-1)*(f+b); the rest is idle.
    const uint64_t period = (m + p - 1) * (f + b);
    uint64_t t = 10000 + stage * f;  // the stage's first forward waits for earlier stages
    for (int i = 0; i < m; ++i) {
      bubbles.add_busy(t, t + f);
      bubbles.add_busy(t + f, t + f + b);
      t += f + b;
    }
    bubbles.add_step(10000, 10000 + period, 1);
    const auto got = settle(bubbles, UINT64_MAX);
    ASSERT_EQ(got.size(), 1u);
    const double idle = 1.0 - static_cast<double>(got[0].busy_ns) / got[0].window_ns;
    EXPECT_NEAR(idle, static_cast<double>(p - 1) / (m + p - 1), 1e-12) << stage;
  }
}

TEST(StepBubbles, ConsecutiveStepsAndPruning) {
  StepBubbles b;
  for (uint64_t step = 0; step < 100; ++step) {
    const uint64_t start = step * 1000;
    b.add_busy(start + 100, start + 400);
    b.add_step(start, start + 1000, step);
    const auto m = settle(b, start + 1000);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].busy_ns, 300u);
    EXPECT_LE(b.intervals(), 1u);  // the settled window's intervals are forgotten
  }
  // An interval of a window already measured is ignored.
  b.add_busy(50, 60);
  EXPECT_EQ(b.intervals(), 0u);
}

TEST(StepBubbles, PendingStepsAreBounded) {
  StepBubbles b;
  for (uint64_t i = 0; i < 3 * StepBubbles::kMaxPendingSteps; ++i) b.add_step(i, i + 1, i);
  EXPECT_EQ(b.pending_steps(), StepBubbles::kMaxPendingSteps);
  for (uint64_t i = 0; i < 2 * StepBubbles::kMaxIntervals; ++i) b.add_busy(10 + i, 11 + i);
  EXPECT_LE(b.intervals(), StepBubbles::kMaxIntervals);
}

}  // namespace
}  // namespace xpu_timer::inject
