#include "inject/bounded_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace xpu_timer::inject {
namespace {

struct Item {
  uint32_t producer;
  uint32_t value;
};

TEST(BoundedQueue, RoundsCapacityUpToPowerOfTwo) {
  BoundedQueue<int> q(100);
  EXPECT_EQ(q.capacity(), 128u);
}

TEST(BoundedQueue, FullQueueRefusesAndPopsInOrder) {
  BoundedQueue<int> q(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.try_push(i));
  EXPECT_FALSE(q.try_push(99));
  uint64_t pos = 0;
  EXPECT_EQ(q.try_reserve(&pos), nullptr);
  EXPECT_EQ(q.approx_size(), 4u);
  int v;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(q.try_pop(&v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(q.try_pop(&v));
  EXPECT_TRUE(q.try_push(5));  // space again after popping
}

TEST(BoundedQueue, UnpublishedReservationBlocksConsumerUntilPublished) {
  BoundedQueue<int> q(8);
  uint64_t pos_a = 0, pos_b = 0;
  auto* a = q.try_reserve(&pos_a);
  auto* b = q.try_reserve(&pos_b);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  b->item = 2;
  q.publish(b, pos_b);
  int v;
  EXPECT_FALSE(q.try_pop(&v));  // a is reserved, not yet published: order is kept
  a->item = 1;
  q.publish(a, pos_a);
  ASSERT_TRUE(q.try_pop(&v));
  EXPECT_EQ(v, 1);
  ASSERT_TRUE(q.try_pop(&v));
  EXPECT_EQ(v, 2);
}

// Several producers against one consumer, with a queue small enough to be
// full most of the time. Producers retry on "full" (the hooks instead drop;
// a refusal must leave the queue intact either way): every item arrives
// exactly once and in per-producer order.
TEST(BoundedQueue, MultiProducerStressDeliversEveryItemOnceInOrder) {
  constexpr int kProducers = 4;
  constexpr uint32_t kPerProducer = 100000;
  BoundedQueue<Item> q(64);
  std::atomic<int> running{kProducers};
  std::atomic<uint64_t> refused{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (uint32_t i = 0; i < kPerProducer; ++i) {
        while (!q.try_push(Item{static_cast<uint32_t>(p), i})) {
          refused.fetch_add(1, std::memory_order_relaxed);
          std::this_thread::yield();
        }
      }
      running.fetch_sub(1);
    });
  }
  std::vector<int64_t> last(kProducers, -1);
  std::vector<uint64_t> received(kProducers, 0);
  Item it;
  for (;;) {
    if (q.try_pop(&it)) {
      ASSERT_LT(it.producer, static_cast<uint32_t>(kProducers));
      ASSERT_EQ(static_cast<int64_t>(it.value), last[it.producer] + 1);
      last[it.producer] = it.value;
      ++received[it.producer];
    } else if (running.load() == 0 && q.approx_size() == 0) {
      break;
    }
  }
  for (auto& t : producers) t.join();
  EXPECT_FALSE(q.try_pop(&it));
  for (int p = 0; p < kProducers; ++p) EXPECT_EQ(received[p], kPerProducer) << "producer " << p;
  RecordProperty("refused_pushes", static_cast<int>(refused.load()));
}

// The event pools use the queue with several consumers too.
TEST(BoundedQueue, MultiConsumerTakesEachItemOnce) {
  constexpr uint32_t kItems = 4096;
  BoundedQueue<uint32_t> q(kItems);
  for (uint32_t i = 0; i < kItems; ++i) ASSERT_TRUE(q.try_push(i));
  std::vector<std::atomic<int>> seen(kItems);
  std::vector<std::thread> consumers;
  for (int c = 0; c < 4; ++c) {
    consumers.emplace_back([&] {
      uint32_t v;
      while (q.try_pop(&v)) seen[v].fetch_add(1);
    });
  }
  for (auto& t : consumers) t.join();
  for (uint32_t i = 0; i < kItems; ++i) EXPECT_EQ(seen[i].load(), 1) << i;
}

}  // namespace
}  // namespace xpu_timer::inject
