#include "inject/sample_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace xpu_timer::inject {
namespace {

constexpr uint64_t kSecond = 1000000000ull;

TEST(SampleGate, RateZeroTimesEveryCall) {
  auto g = std::make_unique<SampleGate>(0);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(g->should_time(sample_key(1, 2), 5));
}

TEST(SampleGate, EachKeyIsTimedAtMostRateTimesPerSecond) {
  auto g = std::make_unique<SampleGate>(4);  // one timing per 250 ms and key
  const uint64_t a = sample_key(1, 1024, 1024, 1024), b = sample_key(1, 64, 64, 64);
  int timed_a = 0, timed_b = 0;
  // 10 000 calls of each key spread over 2 s.
  for (int i = 0; i < 10000; ++i) {
    const uint64_t now = kSecond + static_cast<uint64_t>(i) * 2 * kSecond / 10000;
    timed_a += g->should_time(a, now);
    timed_b += g->should_time(b, now);
  }
  EXPECT_EQ(timed_a, 8);
  EXPECT_EQ(timed_b, 8);
}

TEST(SampleGate, FirstCallOfANewShapeIsTimed) {
  auto g = std::make_unique<SampleGate>(1);
  EXPECT_TRUE(g->should_time(sample_key(7), 10));
  EXPECT_FALSE(g->should_time(sample_key(7), 11));
  EXPECT_TRUE(g->should_time(sample_key(8), 12));
}

TEST(SampleGate, KeysBeyondTheProbeLimitShareOneLimiter) {
  auto g = std::make_unique<SampleGate>(1);
  // Raw keys (any non-zero 64-bit value) that all start probing at slot 5:
  // the first kProbes of them fill slots 5.. and are timed on their own.
  auto key = [](uint64_t i) { return (i << 12) | 5; };
  for (uint64_t i = 1; i <= SampleGate::kProbes; ++i) EXPECT_TRUE(g->should_time(key(i), 1));
  // Later ones find no slot: together they get one timing per interval.
  int timed = 0;
  for (uint64_t i = 100; i < 200; ++i) timed += g->should_time(key(i), 2 * kSecond);
  EXPECT_EQ(timed, 1);
  // The keys that own a slot keep their own window.
  EXPECT_TRUE(g->should_time(key(1), 2 * kSecond));
}

TEST(SampleGate, ConcurrentCallersTimeAKeyOncePerWindow) {
  auto g = std::make_unique<SampleGate>(1);
  std::atomic<int> timed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) timed += g->should_time(sample_key(42), 5 * kSecond);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(timed.load(), 1);
}

}  // namespace
}  // namespace xpu_timer::inject
