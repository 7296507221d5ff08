// GpuClock against a fake CUDA runtime: each event is given the host time at
// which it completed, and the GPU reads it as that time plus an offset the
// clock does not know. A mapped time must then lie within the clock's
// bracket of the true host time. No real clock is read: every time is the
// test's.
#include "inject/gpu_clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <deque>

#include "inject/cuda_runtime_calls.h"

namespace xpu_timer::inject {
namespace {

constexpr uint64_t kMs = 1000 * 1000;
constexpr uint64_t kT0 = 1000 * 1000 * kMs;  // host time of the first launch

struct FakeEvent {
  int64_t gpu_ns = 0;
};

struct FakeGpu {
  std::deque<FakeEvent> events;  // stable addresses
  int64_t offset_ns = 987654321012;  // GPU clock minus host clock
  bool fail = false;
  int elapsed_calls = 0;
};
FakeGpu* g_gpu = nullptr;

cudaError_t fake_elapsed(float* ms, cudaEvent_t a, cudaEvent_t b) {
  ++g_gpu->elapsed_calls;
  if (g_gpu->fail) return cudaErrorInvalidResourceHandle;
  const auto* ea = reinterpret_cast<FakeEvent*>(a);
  const auto* eb = reinterpret_cast<FakeEvent*>(b);
  *ms = static_cast<float>(static_cast<double>(eb->gpu_ns - ea->gpu_ns) / 1e6);
  return cudaSuccess;
}
cudaError_t fake_last_error() { return cudaSuccess; }

class GpuClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_gpu = &gpu_;
    saved_ = cuda_calls();
    CudaRuntimeCalls* c = mutable_cuda_calls();
    c->event_elapsed_time = &fake_elapsed;
    c->get_last_error = &fake_last_error;
  }
  void TearDown() override {
    *mutable_cuda_calls() = saved_;
    g_gpu = nullptr;
  }

  // An event that completed at host time `host_ns`.
  cudaEvent_t event_at(uint64_t host_ns) {
    gpu_.events.push_back(FakeEvent{static_cast<int64_t>(host_ns) + gpu_.offset_ns});
    return reinterpret_cast<cudaEvent_t>(&gpu_.events.back());
  }

  // An operation launched at `launch`, started on the GPU `queued` later,
  // running `run`, seen complete by the Poller `seen_late` after its end.
  struct Op {
    GpuClock::Observation o;
    uint64_t true_start = 0;
  };
  Op op(uint64_t launch, uint64_t queued, uint64_t run, uint64_t seen_late, uint32_t token,
        bool end_event) {
    Op r;
    r.true_start = launch + queued;
    r.o.start = event_at(r.true_start);
    r.o.launch_ns = launch;
    r.o.token = token;
    if (end_event) {
      r.o.end = event_at(r.true_start + run);
    } else {
      r.o.end_after_start_ns = run;
    }
    r.o.seen_ns = r.true_start + run + seen_late;
    return r;
  }

  // The mapped start is within the bracket of the truth (plus CUDA's float
  // milliseconds: under 1 us at the distances here).
  void expect_within_bracket(GpuClock& clock, const Op& o, const GpuClock::Mapped& m) {
    ASSERT_NE(m.start_ns, 0u);
    const double error = static_cast<double>(m.start_ns) - static_cast<double>(o.true_start);
    EXPECT_LE(std::abs(error), static_cast<double>(clock.bracket_ns(0)) + 1e3)
        << "bracket " << clock.bracket_ns(0);
  }

  FakeGpu gpu_;
  CudaRuntimeCalls saved_;
};

TEST_F(GpuClockTest, TheFirstOperationBecomesTheReferenceAndIsKept) {
  GpuClock clock;
  const Op a = op(kT0, 5'000, 100'000, 300'000, 7, false);
  const GpuClock::Mapped m = clock.observe(0, a.o);
  EXPECT_EQ(m.keep, 7u);
  EXPECT_EQ(m.give_back, GpuClock::kNoToken);
  EXPECT_EQ(clock.reference_token(0), 7u);
  // One operation bounds its start between its launch and its sighting.
  EXPECT_EQ(clock.bracket_ns(0), 5'000u + 300'000u);
  expect_within_bracket(clock, a, m);
  EXPECT_EQ(m.end_ns - m.start_ns, 100'000u);
}

// An idle GPU starts an operation right at its launch and the Poller looks
// at random moments of its 1 ms pass: after a few dozen operations both
// bounds are tight and the mapping is exact to a few microseconds.
TEST_F(GpuClockTest, AnIdleGpuGivesTimesExactToAFewMicroseconds) {
  GpuClock clock;
  uint64_t t = kT0;
  for (uint32_t i = 0; i < 50; ++i, t += kMs) {
    const uint64_t late = 500 + (i * 7919 * 131) % kMs;  // spread over the pass
    const Op a = op(t, 4'000, 50'000, late, i, true);
    expect_within_bracket(clock, a, clock.observe(0, a.o));
  }
  EXPECT_LE(clock.bracket_ns(0), 4'000u + 20'000u);
  const Op last = op(t, 4'000, 50'000, 700'000, 99, true);
  const GpuClock::Mapped m = clock.observe(0, last.o);
  EXPECT_NEAR(static_cast<double>(m.start_ns), static_cast<double>(last.true_start), 20'000);
  EXPECT_NEAR(static_cast<double>(m.end_ns), static_cast<double>(last.true_start + 50'000),
              20'000);
}

// A Poller that always looks 700 us late (a coarse pass): the upper bound
// stays loose, the mapping stays within the bracket, and the bracket says so.
TEST_F(GpuClockTest, ALatePollerWidensTheBracketButStaysWithinIt) {
  GpuClock clock;
  uint64_t t = kT0;
  for (uint32_t i = 0; i < 20; ++i, t += kMs) {
    const Op a = op(t, 4'000, 50'000, 700'000, i, true);
    expect_within_bracket(clock, a, clock.observe(0, a.o));
  }
  EXPECT_GE(clock.bracket_ns(0), 700'000u);
}

// A GPU that never idles (every operation queued 30 ms behind others): the
// lower bounds are loose, but a Poller that once looked right after a
// completion gives a tight upper bound, and the estimate follows it.
TEST_F(GpuClockTest, ABusyGpuIsMappedThroughTheTightestSighting) {
  GpuClock clock;
  uint64_t t = kT0;
  for (uint32_t i = 0; i < 30; ++i, t += kMs) {
    const uint64_t late = i == 17 ? 1'000 : 400'000 + (i * 37'000) % 500'000;
    clock.observe(0, op(t, 30 * kMs, 80'000, late, i, false).o);
  }
  const Op a = op(t, 30 * kMs, 80'000, 600'000, 1000, false);
  const GpuClock::Mapped m = clock.observe(0, a.o);
  EXPECT_NEAR(static_cast<double>(m.start_ns), static_cast<double>(a.true_start),
              static_cast<double>(GpuClock::kQuerySlackNs) + 1'000);
}

// Every kRenewNs a newer operation's start becomes the reference: the caller
// keeps its pair and gets the old one back, and times stay right.
TEST_F(GpuClockTest, TheReferenceIsRenewedAndTheOldPairGivenBack) {
  GpuClock clock;
  const Op first = op(kT0, 2'000, 10'000, 5'000, 1, false);
  clock.observe(0, first.o);
  const Op before = op(kT0 + GpuClock::kRenewNs / 2, 2'000, 10'000, 5'000, 2, false);
  GpuClock::Mapped m = clock.observe(0, before.o);
  EXPECT_EQ(m.keep, GpuClock::kNoToken);
  EXPECT_EQ(m.give_back, GpuClock::kNoToken);
  // Its own bounds are loose (queued 300 us, seen 400 us late): the tight
  // bounds carried over from the old reference keep the mapping exact.
  const Op after = op(kT0 + GpuClock::kRenewNs + 10 * kMs, 300'000, 10'000, 400'000, 3, false);
  m = clock.observe(0, after.o);
  EXPECT_EQ(m.keep, 3u);
  EXPECT_EQ(m.give_back, 1u);
  EXPECT_EQ(clock.reference_token(0), 3u);
  expect_within_bracket(clock, after, m);
  EXPECT_LE(clock.bracket_ns(0), 7'000u + 1'000u);  // the bounds moved with it
  const Op later = op(kT0 + GpuClock::kRenewNs + 20 * kMs, 2'000, 10'000, 5'000, 4, false);
  expect_within_bracket(clock, later, clock.observe(0, later.o));
}

// The GPU clock steps 2 ms against the host (drift accumulated, or a clock
// adjustment): the old bounds cross the new ones, and the clock starts again
// from the newest operation instead of keeping a wrong offset.
TEST_F(GpuClockTest, CrossedBoundsStartAgainFromTheNewestOperation) {
  GpuClock clock;
  uint64_t t = kT0;
  for (uint32_t i = 0; i < 5; ++i, t += kMs) clock.observe(0, op(t, 3'000, 10'000, 4'000, i, false).o);
  gpu_.offset_ns += 2 * static_cast<int64_t>(kMs);
  const Op a = op(t, 3'000, 10'000, 4'000, 50, false);
  const GpuClock::Mapped m = clock.observe(0, a.o);
  expect_within_bracket(clock, a, m);
  EXPECT_LE(clock.bracket_ns(0), 7'000u + 1'000u);
}

TEST_F(GpuClockTest, WithoutAPairToKeepNothingBecomesTheReference) {
  GpuClock clock;
  const Op a = op(kT0, 2'000, 10'000, 5'000, GpuClock::kNoToken, false);
  const GpuClock::Mapped m = clock.observe(0, a.o);
  EXPECT_EQ(m.start_ns, 0u);
  EXPECT_EQ(m.keep, GpuClock::kNoToken);
  EXPECT_EQ(clock.reference_token(0), GpuClock::kNoToken);
}

TEST_F(GpuClockTest, AFailedElapsedTimeQueryTurnsTheDeviceOff) {
  GpuClock clock;
  clock.observe(0, op(kT0, 2'000, 10'000, 5'000, 1, true).o);
  gpu_.fail = true;
  EXPECT_EQ(clock.observe(0, op(kT0 + kMs, 2'000, 10'000, 5'000, 2, true).o).start_ns, 0u);
  gpu_.fail = false;
  const int calls = gpu_.elapsed_calls;
  EXPECT_EQ(clock.observe(0, op(kT0 + 2 * kMs, 2'000, 10'000, 5'000, 3, true).o).start_ns, 0u);
  EXPECT_EQ(gpu_.elapsed_calls, calls);  // no more CUDA calls for that device
  // Another device is unaffected.
  const Op b = op(kT0, 2'000, 10'000, 5'000, 1, false);
  EXPECT_NE(clock.observe(1, b.o).start_ns, 0u);
}

TEST_F(GpuClockTest, ASightingBeforeTheLaunchBoundsNothing) {
  GpuClock clock;
  const Op a = op(kT0, 2'000, 10'000, 5'000, 1, false);
  clock.observe(0, a.o);
  const uint64_t bracket = clock.bracket_ns(0);
  Op bad = op(kT0 + kMs, 2'000, 10'000, 5'000, 2, false);
  bad.o.seen_ns = bad.o.launch_ns - 1'000;  // impossible: a broken clock read
  clock.observe(0, bad.o);
  EXPECT_EQ(clock.bracket_ns(0), bracket);
}

}  // namespace
}  // namespace xpu_timer::inject
