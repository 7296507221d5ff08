// SlowSummaryExchange (slow_summary_exchange.h) on a store in memory: every
// node's summary read once a period, its owner's only; with a leader, the
// others read its digest instead, and only the leader's.
#include "supervisor/coordination/slow_summary_exchange.h"

#include <gtest/gtest.h>

#include <memory>

#include "common/clock.h"
#include "common/op_names.h"
#include "supervisor/analysis/slow_summary.h"
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
  LeaderElection leader{&store, &trust, kRoot};  // never run: no one leads
  SlowSummaryExchange slow{&store, &trust, &leader, kRoot};
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

// One node's side: its client, trust, election and slow-rank exchange.
struct SlowSide {
  SlowSide(MemoryKeyspace* keyspace, int node, int64_t lease) : node(node), store(keyspace, lease) {
    trust.set_job(job_shape(6, 2));  // three nodes
  }
  bool round(double now_s, const std::string& summary) {
    slow.offer(summary);
    return trust.read_owners(node, "host") && leader.round(node) && slow.round(node, now_s);
  }
  int node;
  MemoryStore store;
  KeyTrust trust{&store, "etcd://memory", kRoot};
  LeaderElection leader{&store, &trust, kRoot};
  SlowSummaryExchange slow{&store, &trust, &leader, kRoot};
};

// Node `node`'s summary: rank 2 x node + 1 its straggler in kComm when
// `straggler`, its ranks' time in kComm as given.
std::string summary_of(int node, double now_s, double t0, double t1, bool straggler) {
  constexpr uint64_t kComm = 0x0123456789abcdefull;
  NodeSlowSummary s;
  s.node = node;
  s.unix_s = now_s;
  s.time_in_collective[kComm] = {{2 * node, {100, t0}}, {2 * node + 1, {100, t1}}};
  if (straggler) {
    Straggler x;
    x.rank = 2 * node + 1;
    x.node = node;
    x.comm = kComm;
    x.op = static_cast<uint16_t>(proto::OpName::kAllReduce);
    x.summary = "rank " + std::to_string(x.rank) + " is slow";
    s.stragglers.push_back(x);
  }
  return slow_summary_text(s);
}

TEST(SlowDigest, TheOthersReadTheLeadersDigestForTheSameStragglers) {
  MemoryKeyspace keyspace;
  std::vector<std::unique_ptr<SlowSide>> sides;
  for (int n = 0; n < 3; ++n) sides.push_back(std::make_unique<SlowSide>(&keyspace, n, 100 + n));
  const double t = unix_now_s();
  // Node 2's rank 5 arrives last (least time in the collective).
  const std::string texts[] = {summary_of(0, t, 0.020, 0.021, false),
                               summary_of(1, t, 0.019, 0.018, false),
                               summary_of(2, t, 0.017, 0.002, true)};
  for (double at : {t, t + SlowSummaryExchange::kPeriodS}) {
    for (int n : {0, 1, 2}) ASSERT_TRUE(sides[n]->round(at, texts[n]));
  }
  ASSERT_TRUE(sides[0]->leader.leading());
  EXPECT_EQ(sides[0]->slow.whole_reads(), 2u);
  EXPECT_EQ(sides[0]->slow.summaries().size(), 3u);
  for (int n : {1, 2}) {
    // Its first period may come before the leader's first digest.
    EXPECT_GE(sides[n]->slow.digest_reads(), 1u) << n;
    EXPECT_LE(sides[n]->slow.whole_reads(), 1u) << n;
  }
  // Node 1 merges its own summary with the digest: the same straggler as
  // over every summary, from one node's entries only.
  const std::map<int, std::string> got = sides[1]->slow.summaries();
  EXPECT_EQ(got.count(0), 0u);  // nothing of node 0 matters
  std::vector<NodeSlowSummary> seen(1), all(3);
  std::string error;
  ASSERT_TRUE(parse_slow_summary(texts[1], 6, &seen[0], &error)) << error;
  for (const auto& [node, text] : got) {
    if (node == 1) continue;
    seen.emplace_back();
    ASSERT_TRUE(parse_slow_summary(text, 6, &seen.back(), &error)) << error;
  }
  for (int n : {0, 1, 2}) ASSERT_TRUE(parse_slow_summary(texts[n], 6, &all[n], &error));
  const SlowReport a = merge_slow_reports(SlowReport{}, all);
  const SlowReport b = merge_slow_reports(SlowReport{}, seen);
  ASSERT_EQ(a.stragglers.size(), 1u);
  ASSERT_EQ(b.stragglers.size(), 1u);
  EXPECT_EQ(b.stragglers[0].rank, 5);
}

TEST(SlowDigest, AForgedOrOldDigestIsNotTakenAndTheSummariesAreReadInstead) {
  MemoryKeyspace keyspace;
  SlowSide a(&keyspace, 0, 100), b(&keyspace, 1, 200);
  const double t = unix_now_s();
  ASSERT_TRUE(a.round(t, summary_of(0, t, 0.02, 0.02, false)));
  ASSERT_TRUE(b.round(t, summary_of(1, t, 0.02, 0.002, true)));
  ASSERT_TRUE(a.leader.leading());
  // A digest over the leader's under another lease: ignored.
  SlowDigest lie;
  lie.leader = 0;
  lie.now_unix_s = t + SlowSummaryExchange::kPeriodS;
  keyspace.put(kRoot + "/leader/slow", slow_digest_text(lie), 666);
  const uint64_t digests = b.slow.digest_reads();
  uint64_t whole = b.slow.whole_reads();
  ASSERT_TRUE(b.round(t + SlowSummaryExchange::kPeriodS, summary_of(1, t, 0.02, 0.002, true)));
  EXPECT_EQ(b.slow.digest_reads(), digests);
  EXPECT_EQ(b.slow.whole_reads(), whole + 1);
  EXPECT_EQ(b.slow.summaries().size(), 2u);
  // The leader's own again, taken; then older than kDigestMaxAgeS (a
  // leader gone): not taken.
  ASSERT_TRUE(a.round(t + SlowSummaryExchange::kPeriodS, summary_of(0, t, 0.02, 0.02, false)));
  whole = b.slow.whole_reads();
  ASSERT_TRUE(b.round(t + 2 * SlowSummaryExchange::kPeriodS, summary_of(1, t, 0.02, 0.002, true)));
  EXPECT_EQ(b.slow.digest_reads(), digests + 1);
  EXPECT_EQ(b.slow.whole_reads(), whole);
  ASSERT_TRUE(b.round(t + 5 * SlowSummaryExchange::kPeriodS, summary_of(1, t, 0.02, 0.002, true)));
  EXPECT_EQ(b.slow.digest_reads(), digests + 1);
  EXPECT_EQ(b.slow.whole_reads(), whole + 1);
}

}  // namespace
}  // namespace xpu_timer::supervisor
