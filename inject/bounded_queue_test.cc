#include "inject/bounded_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

#include "inject/op_record.h"

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

namespace xpu_timer::inject {
namespace {

// The record queue's cells start on a cache line, and a head-only record
// (a sampled-out GEMM or copy) lies in the cell's first line with its
// sequence number.
TEST(BoundedQueue, RecordCellsAreLineAlignedAndTheHeadSharesTheFirstLine) {
  using Q = BoundedQueue<OpRecord, 64>;
  static_assert(alignof(Q::Cell) == 64);
  static_assert(sizeof(Q::Cell) % 64 == 0);
  EXPECT_EQ(offsetof(Q::Cell, item) + kOpRecordHeadBytes, 64u);
  Q q(4);
  uint64_t pos = 0;
  Q::Cell* a = q.try_reserve(&pos);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  q.publish(a, pos);
  Q::Cell* b = q.try_reserve(&pos);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
  q.publish(b, pos);
}

// try_pop_with hands the item in its cell to the reader, once, in order.
TEST(BoundedQueue, PopWithReadsEachItemInItsCell) {
  BoundedQueue<int> q(4);
  ASSERT_TRUE(q.try_push(7));
  ASSERT_TRUE(q.try_push(8));
  std::vector<int> seen;
  const auto read = [&seen](const int& v) { seen.push_back(v); };
  EXPECT_TRUE(q.try_pop_with(read));
  EXPECT_TRUE(q.try_pop_with(read));
  EXPECT_FALSE(q.try_pop_with(read));
  EXPECT_EQ(seen, (std::vector<int>{7, 8}));
}

// A head-only record reads back with the tail's defaults whatever an
// earlier record left in the cell's tail; a full record reads back whole.
TEST(OpRecord, HeadOnlyRecordReadsTheDefaultsOverAStaleTail) {
  OpRecord cell;
  std::memset(static_cast<void*>(&cell), 0xAB, sizeof(cell));  // an earlier record's bytes
  cell.valid = 1;
  cell.flags = OpRecord::kUntimed | OpRecord::kHeadOnly | OpRecord::kCountIsBytes;
  cell.nmarks = 0;
  cell.bytes = 4096;
  cell.m = 64;
  OpRecord out;
  std::memset(static_cast<void*>(&out), 0x5C, sizeof(out));
  read_record(cell, &out);
  EXPECT_EQ(out.bytes, 4096u);
  EXPECT_EQ(out.m, 64u);
  EXPECT_EQ(out.count, 4096u);  // a copy's count is its bytes
  EXPECT_EQ(out.device, -1);
  EXPECT_EQ(out.group_size, 1u);
  EXPECT_EQ(out.peer, -1);
  EXPECT_EQ(out.red_op, 0);
  EXPECT_EQ(out.pair_index, 0u);
  EXPECT_EQ(out.nranks, 0u);
  EXPECT_EQ(out.comm_hash, 0u);
  EXPECT_EQ(out.seq, 0u);
  EXPECT_EQ(out.marks[0].seq, 0u);
  cell.flags = OpRecord::kUntimed | OpRecord::kHeadOnly;  // a GEMM: no count
  read_record(cell, &out);
  EXPECT_EQ(out.count, 0u);

  OpRecord full{};
  full.valid = 1;
  full.flags = OpRecord::kHasPair;
  full.device = 3;
  full.seq = 42;
  full.nmarks = 1;
  full.marks[0] = CommMark{5, 0, 42};
  read_record(full, &out);
  EXPECT_EQ(std::memcmp(&out, &full, sizeof(full)), 0);
  EXPECT_FALSE(tail_is_default(/*device=*/0, 1, 0, 0, -1, 0));
  EXPECT_FALSE(tail_is_default(-1, 2, 0, 0, -1, 0));
  EXPECT_FALSE(tail_is_default(-1, 1, 7, 8, -1, 0));
  EXPECT_TRUE(tail_is_default(-1, 1, 8, 8, -1, 0));
}

}  // namespace
}  // namespace xpu_timer::inject
