// GpuClock against a fake CUDA runtime whose GPU clock is the host clock
// plus a fixed offset: an event completes when it is recorded, at GPU time
// host + kGpuOffsetNs. The true host time of every event is then known, and
// a mapped time must be within half the anchor's bracket of it.
#include "inject/gpu_clock.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cmath>
#include <cstdint>
#include <deque>

#include "common/clock.h"
#include "inject/cuda_runtime_calls.h"

namespace xpu_timer::inject {
namespace {

constexpr uint64_t kGpuOffsetNs = 123456789012ull;

struct FakeEvent {
  uint64_t host_ns = 0;  // when it was recorded (and completed)
  uint64_t gpu_ns = 0;
};

struct FakeGpu {
  std::deque<FakeEvent> events;  // stable addresses
  uint64_t sync_sleep_ns = 0;    // stretches every anchor bracket by at least this
};
FakeGpu* g_gpu = nullptr;

void sleep_for_ns(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

cudaError_t fake_event_create(cudaEvent_t* e, unsigned /*flags*/) {
  g_gpu->events.emplace_back();
  *e = reinterpret_cast<cudaEvent_t>(&g_gpu->events.back());
  return cudaSuccess;
}
cudaError_t fake_stream_create(cudaStream_t* s, unsigned /*flags*/) {
  static int stream;
  *s = reinterpret_cast<cudaStream_t>(&stream);
  return cudaSuccess;
}
cudaError_t fake_record(cudaEvent_t e, cudaStream_t /*s*/) {
  auto* event = reinterpret_cast<FakeEvent*>(e);
  event->host_ns = monotonic_ns();
  event->gpu_ns = event->host_ns + kGpuOffsetNs;
  return cudaSuccess;
}
cudaError_t fake_synchronize(cudaEvent_t /*e*/) {
  if (g_gpu->sync_sleep_ns != 0) sleep_for_ns(g_gpu->sync_sleep_ns);
  return cudaSuccess;
}
cudaError_t fake_elapsed(float* ms, cudaEvent_t a, cudaEvent_t b) {
  const auto* ea = reinterpret_cast<FakeEvent*>(a);
  const auto* eb = reinterpret_cast<FakeEvent*>(b);
  *ms =
      static_cast<float>(static_cast<double>(static_cast<int64_t>(eb->gpu_ns - ea->gpu_ns)) / 1e6);
  return cudaSuccess;
}
cudaError_t fake_last_error() { return cudaSuccess; }

class GpuClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_gpu = &gpu_;
    saved_ = cuda_calls();
    CudaRuntimeCalls* c = mutable_cuda_calls();
    c->event_create_with_flags = &fake_event_create;
    c->stream_create_with_flags = &fake_stream_create;
    c->event_record = &fake_record;
    c->event_synchronize = &fake_synchronize;
    c->event_elapsed_time = &fake_elapsed;
    c->get_last_error = &fake_last_error;
  }
  void TearDown() override {
    *mutable_cuda_calls() = saved_;
    g_gpu = nullptr;
  }

  // An event of the job recorded now: (event, its true host time).
  std::pair<cudaEvent_t, uint64_t> job_event() {
    cudaEvent_t e = nullptr;
    fake_event_create(&e, 0);
    fake_record(e, nullptr);
    return {e, reinterpret_cast<FakeEvent*>(e)->host_ns};
  }

  // The mapped time of an event recorded now is within half the anchor's
  // bracket of its true time (plus the rounding of CUDA's float
  // milliseconds: under 4 ns at the distances here).
  void expect_mapped_exactly(GpuClock& clock, uint64_t now_ns) {
    const auto [event, host_ns] = job_event();
    const uint64_t mapped = clock.host_ns_of(0, event, now_ns);
    ASSERT_NE(mapped, 0u);
    const double error = static_cast<double>(mapped) - static_cast<double>(host_ns);
    const double bound = static_cast<double>(clock.bracket_ns(0)) / 2 + 1e3;
    EXPECT_LE(std::abs(error), bound) << "bracket " << clock.bracket_ns(0) << " ns";
  }

  FakeGpu gpu_;
  CudaRuntimeCalls saved_;
};

TEST_F(GpuClockTest, MapsEventsWithinHalfTheBracket) {
  GpuClock clock;
  expect_mapped_exactly(clock, monotonic_ns());
  EXPECT_GT(clock.bracket_ns(0), 0u);
}

// A renewal whose tries are all stretched (a busy host) keeps the old
// anchor: every time is still mapped through an anchor whose host time
// matches its event. Before the fix the event was re-recorded under the old
// host time, shifting every later time by the anchor's age.
TEST_F(GpuClockTest, AWideRenewalKeepsTheOldAnchor) {
  GpuClock clock;
  uint64_t now = monotonic_ns();
  expect_mapped_exactly(clock, now);
  const uint64_t first_bracket = clock.bracket_ns(0);
  sleep_for_ns(50'000'000);  // the anchor ages 50 ms: a shift the bound cannot hide
  gpu_.sync_sleep_ns = 2 * GpuClock::kMaxBracketNs + first_bracket;  // wider than the anchor
  now += GpuClock::kRenewNs + 1;                                     // renewal due
  expect_mapped_exactly(clock, now);
  EXPECT_EQ(clock.bracket_ns(0), first_bracket);  // not replaced
}

// The first anchor is kept however wide (there is nothing better), then
// retried every kRetryWideNs until a tight one replaces it.
TEST_F(GpuClockTest, AWideFirstAnchorIsReplacedByATightOne) {
  GpuClock clock;
  gpu_.sync_sleep_ns = 2 * GpuClock::kMaxBracketNs;
  uint64_t now = monotonic_ns();
  expect_mapped_exactly(clock, now);
  EXPECT_GT(clock.bracket_ns(0), GpuClock::kMaxBracketNs);
  gpu_.sync_sleep_ns = 0;
  // On a loaded machine a try may still be stretched: retry as the Poller
  // would, each time past the retry interval, until one is tight.
  for (int i = 0; i < 200 && clock.bracket_ns(0) > GpuClock::kMaxBracketNs; ++i) {
    now += GpuClock::kRetryWideNs + 1;
    expect_mapped_exactly(clock, now);
  }
  EXPECT_LE(clock.bracket_ns(0), GpuClock::kMaxBracketNs);
}

}  // namespace
}  // namespace xpu_timer::inject
