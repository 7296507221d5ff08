// ProgressExchange (progress_exchange.h) on a store in memory, and
// merge_progress: documents put only when they change, stamps applied to
// the documents read, a forger's document refused while the node's own
// stands, late news merged without news only while an alarm stands.
#include "supervisor/coordination/progress_exchange.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "tests/harness/memory_store.h"

namespace xpu_timer::supervisor {
namespace {

using testing::MemoryKeyspace;
using testing::MemoryStore;

const std::string kRoot = "/xpu_timer/j";

// Node `node` of a world of 4 (2 ranks a node) with an AllReduce in flight.
NodeProgress progress(int node, double clock_s) {
  NodeProgress p;
  p.node = node;
  p.host = "host-" + std::to_string(node);
  p.world_size = 4;
  p.snapshot.now_ns = 1'000'000'000'000;
  p.snapshot.now_unix_s = clock_s;
  for (int r = 2 * node; r < 2 * node + 2; ++r) {
    RankSample s;
    s.rank = r;
    s.node = node;
    s.registered = s.alive = s.connected = s.page_ok = true;
    s.pid = 100 + r;
    s.heartbeat_ns = p.snapshot.now_ns;
    s.inflight_count = 1;
    s.oldest_inflight.launch_ns = p.snapshot.now_ns - 5'000'000'000;
    p.snapshot.ranks.push_back(s);
  }
  return p;
}

// One node's side of the exchange: its client, trust and progress.
struct Side {
  Side(MemoryKeyspace* keyspace, int node, int64_t lease)
      : node(node),
        store(keyspace, lease),
        trust(&store, "etcd://memory", kRoot),
        exchange(&store, &trust, "etcd://memory", kRoot) {
    trust.set_job(job_shape(4, 2));
  }
  bool round(const NodeProgress& mine, std::vector<NodeProgress>* others) {
    others->clear();
    return trust.read_owners(node, mine.host) && exchange.publish(mine) &&
           exchange.read(mine, others);
  }
  int node;
  MemoryStore store;
  KeyTrust trust;
  ProgressExchange exchange;
};

// Two nodes that exchanged once: node 0 read node 1's document.
class ProgressExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(b.round(progress(1, now), &others));
    ASSERT_TRUE(a.round(progress(0, now), &others));
    ASSERT_EQ(others.size(), 1u);
  }
  MemoryKeyspace keyspace;
  Side a{&keyspace, 0, 100};
  Side b{&keyspace, 1, 200};
  const double now = unix_now_s();
  std::vector<NodeProgress> others;
};

TEST_F(ProgressExchangeTest, AStampMovesTheTimesOfTheDocumentReadOnce) {
  EXPECT_EQ(others[0].node, 1);
  EXPECT_EQ(others[0].snapshot.ranks.size(), 2u);
  const uint64_t docs = a.exchange.docs_read();
  EXPECT_EQ(a.exchange.full_reads(), 1u);

  // A steady hang: only node 1's clocks move. Its stamp carries them; its
  // document is neither put nor read again.
  NodeProgress later = progress(1, now + 1);
  later.snapshot.now_ns += 1'000'000'000;
  for (RankSample& r : later.snapshot.ranks) r.heartbeat_ns = later.snapshot.now_ns;
  ASSERT_TRUE(b.round(later, &others));
  ASSERT_TRUE(a.round(progress(0, now + 1), &others));
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].snapshot.now_unix_s, now + 1);
  EXPECT_EQ(others[0].snapshot.ranks[0].heartbeat_ns, later.snapshot.now_ns);
  EXPECT_EQ(a.exchange.docs_read(), docs);
  EXPECT_EQ(a.exchange.full_reads(), 1u);

  // Something else changes: the document is read again, alone.
  later.snapshot.ranks[0].issued_total = 9;
  ASSERT_TRUE(b.round(later, &others));
  ASSERT_TRUE(a.round(progress(0, now + 1), &others));
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].snapshot.ranks[0].issued_total, 9u);
  EXPECT_EQ(a.exchange.docs_read(), docs + 1);
}

TEST_F(ProgressExchangeTest, AForgersDocumentLeavesTheNodesOwnStanding) {
  NodeProgress forged = progress(1, now);
  forged.snapshot.ranks[0].issued_total = 77;
  keyspace.put(kRoot + "/nodes/1", node_progress_text(forged), 666);
  ASSERT_TRUE(a.round(progress(0, now), &others));
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].snapshot.ranks[0].issued_total, 0u);
}

TEST(ProgressExchange, ExchangesRarelyOnlyOnceEveryRankIsKnownAndNoAlarmStands) {
  MemoryKeyspace keyspace;
  Side a(&keyspace, 0, 100);
  const double now = unix_now_s();
  const NodeProgress mine = progress(0, now);
  EXPECT_TRUE(a.exchange.due(std::nullopt, false, now));
  EXPECT_TRUE(a.exchange.due(mine, false, now));  // node 1's ranks unknown
  a.exchange.exchanged(true, now, {progress(1, now)});
  EXPECT_FALSE(a.exchange.due(mine, false, now + 1));
  EXPECT_TRUE(a.exchange.due(mine, true, now + 1));
  EXPECT_TRUE(a.exchange.due(mine, false, now + ProgressExchange::kQuietRefreshS));
}

TEST(MergeProgress, LateNewsIsMergedWithoutNewsOnlyWhileAnAlarmStands) {
  const double now = 1.8e9;
  NodeProgress local = progress(0, now);
  const std::map<int, NodeProgress> fresh{{1, progress(1, now - 1)}};
  const std::map<int, NodeProgress> late{{1, progress(1, now - 30)}};

  Snapshot m = merge_progress(local.snapshot, 0, 4, fresh, false, 10);
  ASSERT_EQ(m.ranks.size(), 4u);
  EXPECT_EQ(m.ranks[2].inflight_count, 1u);
  EXPECT_TRUE(m.ranks[2].page_ok);

  m = merge_progress(local.snapshot, 0, 4, late, false, 10);
  EXPECT_EQ(m.ranks.size(), 2u);  // not merged: this node's ranks alone

  m = merge_progress(local.snapshot, 0, 4, late, true, 10);
  ASSERT_EQ(m.ranks.size(), 4u);
  EXPECT_TRUE(m.ranks[2].registered);
  EXPECT_EQ(m.ranks[2].inflight_count, 0u);
  EXPECT_FALSE(m.ranks[2].page_ok);
  // Its heartbeat as last heard: 30 s before local's now.
  EXPECT_EQ(local.snapshot.now_ns - m.ranks[2].heartbeat_ns, 30'000'000'000u);

  m = merge_progress(local.snapshot, 0, 4, late, false, 60);  // a longer timeout
  EXPECT_EQ(m.ranks[2].inflight_count, 1u);
}

}  // namespace
}  // namespace xpu_timer::supervisor
