#include "inject/per_thread_counter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace xpu_timer::inject {
namespace {

// The counter is process-wide: every test reads differences.

TEST(PerThreadCounter, ConcurrentThreadsLoseNoAdd) {
  const uint64_t before = PerThreadCounter::sum();
  constexpr int kThreads = 8, kAdds = 200000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < kAdds; ++i) PerThreadCounter::add_one();
    });
  }
  // A reader while they add: never below what it read before.
  uint64_t last = before;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t now = PerThreadCounter::sum();
    ASSERT_GE(now, last);
    last = now;
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(PerThreadCounter::sum() - before, uint64_t{kThreads} * kAdds);
}

TEST(PerThreadCounter, AnEndedThreadKeepsItsCountAndGivesItsSlotBack) {
  // One thread at a time, more of them than there are slots: each ends
  // (its slot released at exit, before join returns) before the next one
  // starts, so they reuse a few slots and none counts into the overflow.
  const uint64_t before = PerThreadCounter::sum();
  const unsigned claimed_before = PerThreadCounter::slots_claimed();
  constexpr int kThreads = PerThreadCounter::kSlots + 44;
  for (int t = 0; t < kThreads; ++t) {
    std::thread([] {
      for (int i = 0; i < 10; ++i) PerThreadCounter::add_one();
    }).join();
  }
  EXPECT_EQ(PerThreadCounter::sum() - before, uint64_t{kThreads} * 10);
  EXPECT_LE(PerThreadCounter::slots_claimed(), claimed_before + 1);
}

TEST(PerThreadCounter, MoreLiveThreadsThanSlotsStillCountEveryAdd) {
  const uint64_t before = PerThreadCounter::sum();
  constexpr int kThreads = PerThreadCounter::kSlots + 40;
  std::mutex mu;
  std::condition_variable cv;
  int counted = 0;
  bool release = false;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) PerThreadCounter::add_one();
      std::unique_lock<std::mutex> lock(mu);
      ++counted;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });  // alive, holding its slot
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return counted == kThreads; });
    EXPECT_EQ(PerThreadCounter::sum() - before, uint64_t{kThreads} * 5);
    EXPECT_EQ(PerThreadCounter::slots_claimed(), PerThreadCounter::kSlots);
    release = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace xpu_timer::inject
