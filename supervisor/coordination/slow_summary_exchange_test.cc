// SlowSummaryExchange (slow_summary_exchange.h) on a store in memory: every
// node's summary read once a period, its owner's only.
#include "supervisor/coordination/slow_summary_exchange.h"

#include <gtest/gtest.h>

#include "tests/harness/memory_store.h"

namespace xpu_timer::supervisor {
namespace {

using testing::MemoryKeyspace;
using testing::MemoryStore;

const std::string kRoot = "/xpu_timer/j";
using Texts = std::map<int, std::string>;

// Node 0 of two, owner of its key.
class SlowSummaryExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    trust.set_job(job_shape(4, 2));
    ASSERT_TRUE(trust.read_owners(0, "host-a"));
  }
  MemoryKeyspace keyspace;
  MemoryStore store{&keyspace, 100};
  KeyTrust trust{&store, "etcd://memory", kRoot};
  SlowSummaryExchange slow{&store, &trust, kRoot};
};

TEST_F(SlowSummaryExchangeTest, EveryOwnersSummaryOncePerPeriod) {
  keyspace.create(kRoot + "/owners/1", "host-b", 200);
  keyspace.put(kRoot + "/slow/1", "b's", 200);
  keyspace.put(kRoot + "/slow/1/x", "not a summary", 200);

  slow.offer("a's");
  ASSERT_TRUE(slow.round(0, 1000));
  EXPECT_EQ(slow.summaries(), (Texts{{0, "a's"}, {1, "b's"}}));

  keyspace.put(kRoot + "/slow/1", "b's forged", 666);
  const int calls = store.calls;
  ASSERT_TRUE(slow.round(0, 1000 + SlowSummaryExchange::kPeriodS - 1));
  EXPECT_EQ(store.calls, calls);  // not yet
  ASSERT_TRUE(slow.round(0, 1000 + SlowSummaryExchange::kPeriodS));
  EXPECT_EQ(slow.summaries(), (Texts{{0, "a's"}}));
}

TEST_F(SlowSummaryExchangeTest, AFailedRoundKeepsTheLastSummariesAndTriesAgain) {
  slow.offer("a's");
  ASSERT_TRUE(slow.round(0, 1000));
  store.fail = true;
  EXPECT_FALSE(slow.round(0, 1010));
  EXPECT_EQ(slow.summaries(), (Texts{{0, "a's"}}));
  store.fail = false;
  ASSERT_TRUE(slow.round(0, 1011));  // the failed round started no period
  EXPECT_EQ(slow.summaries(), (Texts{{0, "a's"}}));
}

}  // namespace
}  // namespace xpu_timer::supervisor
