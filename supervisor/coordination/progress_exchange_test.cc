// ProgressExchange (progress_exchange.h) on a store in memory, and
// merge_progress: documents put only when they change, stamps applied to
// the documents read, a forger's document refused while the node's own
// stands, late news merged without news only while an alarm stands.
#include "supervisor/coordination/progress_exchange.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "supervisor/coordination/progress_digest.h"
#include "tests/harness/memory_store.h"

namespace xpu_timer::supervisor {
namespace {

using testing::MemoryKeyspace;
using testing::MemoryStore;

const std::string kRoot = "/xpu_timer/j";

// Node `node` of a world of 4 (2 ranks a node) with an AllReduce in flight.
NodeProgress progress(int node, double clock_s, int world = 4,
                      uint64_t now_ns = 1'000'000'000'000) {
  NodeProgress p;
  p.node = node;
  p.host = "host-" + std::to_string(node);
  p.world_size = world;
  p.snapshot.now_ns = now_ns;
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
  Side(MemoryKeyspace* keyspace, int node, int64_t lease, int world = 4)
      : node(node),
        store(keyspace, lease),
        trust(&store, "etcd://memory", kRoot),
        leader(&store, &trust, kRoot),
        exchange(&store, &trust, &leader, "etcd://memory", kRoot) {
    trust.set_job(job_shape(world, 2));
  }
  bool round(const NodeProgress& mine, std::vector<NodeProgress>* others, bool quiet = false) {
    others->clear();
    return trust.read_owners(node, mine.host) && leader.round(node) &&
           exchange.publish(mine, quiet) && exchange.read(mine, others, quiet);
  }
  int node;
  MemoryStore store;
  KeyTrust trust;
  LeaderElection leader;
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

TEST_F(ProgressExchangeTest, AQuietExchangeMovesOnlyADocumentWhoseShapeChanged) {
  const uint64_t docs = a.exchange.docs_read();
  int64_t revision = 0;
  keyspace.range("", 0, &revision);
  // Progress alone (a healthy job): nothing put, nothing read.
  NodeProgress busy = progress(1, now);
  for (RankSample& r : busy.snapshot.ranks) r.issued_total = r.completed_total = 5000;
  ASSERT_TRUE(b.round(busy, &others, /*quiet=*/true));
  ASSERT_TRUE(a.round(progress(0, now), &others, /*quiet=*/true));
  int64_t after = 0;
  for (const KeyValue& kv : keyspace.range("", revision + 1, &after)) ADD_FAILURE() << kv.key;
  EXPECT_EQ(after, revision);
  EXPECT_EQ(a.exchange.docs_read(), docs);
  ASSERT_EQ(others.size(), 1u);  // still known, as last put
  EXPECT_EQ(others[0].snapshot.ranks[0].issued_total, 0u);
  // A rank restarted (another process): put and read, alone.
  busy.snapshot.ranks[1].pid = 4242;
  ASSERT_TRUE(b.round(busy, &others, true));
  ASSERT_TRUE(a.round(progress(0, now), &others, true));
  EXPECT_EQ(a.exchange.docs_read(), docs + 1);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].snapshot.ranks[1].pid, 4242);
  EXPECT_EQ(others[0].snapshot.ranks[0].issued_total, 5000u);
  // An alarm: the whole document again, whatever its shape.
  busy.snapshot.ranks[0].issued_total = 5001;
  ASSERT_TRUE(b.round(busy, &others));
  ASSERT_TRUE(a.round(progress(0, now), &others));
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].snapshot.ranks[0].issued_total, 5001u);
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
  ASSERT_TRUE(a.trust.read_owners(0, mine.host) && a.exchange.publish(mine));
  a.exchange.exchanged(true, now, {progress(1, now)});
  EXPECT_FALSE(a.exchange.due(mine, false, now + 1));
  EXPECT_TRUE(a.exchange.due(mine, true, now + 1));
  EXPECT_TRUE(a.exchange.due(mine, false, now + ProgressExchange::kQuietRefreshS));
  // Progress alone leaves it quiet.
  NodeProgress busy = mine;
  busy.snapshot.ranks[0].issued_total = busy.snapshot.ranks[0].completed_total = 900;
  EXPECT_FALSE(a.exchange.due(busy, false, now + 1));
}

// A node whose first document said node -1 for a rank not yet registered
// (the others refuse such a document) exchanges as soon as the rank knows
// its node, not at the quiet refresh: node 1, which refused it, then knows
// node 0's ranks within a round.
TEST(ProgressExchange, ANodeWhoseShapeChangedExchangesAtOnce) {
  MemoryKeyspace keyspace;
  Side a(&keyspace, 0, 100), b(&keyspace, 1, 200);
  const double now = unix_now_s();
  NodeProgress early = progress(0, now);
  early.snapshot.ranks[1].node = -1;
  early.snapshot.ranks[1].registered = false;
  std::vector<NodeProgress> others;
  ASSERT_TRUE(b.round(progress(1, now), &others));
  ASSERT_TRUE(a.round(early, &others));
  ASSERT_EQ(others.size(), 1u);
  a.exchange.exchanged(true, now, others);  // node 0 knows all 4 ranks
  ASSERT_TRUE(b.round(progress(1, now), &others));
  EXPECT_TRUE(others.empty());  // refused: "rank 1 says it runs on node -1"
  b.exchange.exchanged(true, now, others);
  const NodeProgress registered = progress(0, now);
  EXPECT_FALSE(a.exchange.due(early, false, now + 1));
  ASSERT_TRUE(a.exchange.due(registered, false, now + 1));
  ASSERT_TRUE(a.round(registered, &others, /*quiet=*/true));
  ASSERT_TRUE(b.round(progress(1, now), &others, /*quiet=*/true));
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0].node, 0);
  EXPECT_EQ(others[0].snapshot.ranks.size(), 2u);
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
  EXPECT_DOUBLE_EQ(m.ranks[2].silent_s, 30);
  EXPECT_DOUBLE_EQ(m.ranks[2].news_age_s, 30);
  EXPECT_FALSE(m.ranks[2].news_pending);  // silent past the bound
  // Heard from 2 s ago (its owner key, before the alarm): its news is on its
  // way, unless the store is gone.
  const std::map<int, double> heard{{1, now - 2}};
  m = merge_progress(local.snapshot, 0, 4, late, true, 10, heard);
  EXPECT_DOUBLE_EQ(m.ranks[2].silent_s, 2);
  // What its ranks did is still as of its snapshot, 30 s ago: the lease
  // says the node is there, not where its ranks are.
  EXPECT_DOUBLE_EQ(m.ranks[2].news_age_s, 30);
  EXPECT_TRUE(m.ranks[2].news_pending);
  m = merge_progress(local.snapshot, 0, 4, late, true, 10, heard, /*connected=*/false);
  EXPECT_FALSE(m.ranks[2].news_pending);

  m = merge_progress(local.snapshot, 0, 4, late, false, 60);  // a longer timeout
  EXPECT_EQ(m.ranks[2].inflight_count, 1u);
}

// One leader reads the stamps, the others its digest (progress_digest.h),
// with the same view of every node; a lost leader is replaced once its
// lease ends; a forger's leader key or digest is ignored.
constexpr uint64_t kS = 1'000'000'000;

// Node `node` of a world of 6 (2 ranks a node), an AllReduce in flight for
// 5 s, as of `clock_s` (wall) and 1000 s + `clock_s` - `start_s` (monotonic).
NodeProgress progress_of_six(int node, double clock_s, double start_s) {
  NodeProgress p =
      progress(node, clock_s, 6, 1000 * kS + static_cast<uint64_t>((clock_s - start_s) * 1e9));
  for (RankSample& s : p.snapshot.ranks) {
    s.oldest_inflight.seq = 40 + node;
    s.oldest_inflight.launch_ns = 1000 * kS - 5 * kS;
  }
  return p;
}

class DigestExchangeTest : public ::testing::Test {
 protected:
  // Every node does `n` rounds, in node order, at `clock_s`.
  void rounds(int n, double clock_s) {
    for (int i = 0; i < n; ++i) {
      for (size_t s = 0; s < sides.size(); ++s) {
        if (sides[s] == nullptr) continue;
        std::vector<NodeProgress> others;
        ASSERT_TRUE(sides[s]->round(progress_of_six(static_cast<int>(s), clock_s, start), &others));
        seen[s] = std::move(others);
      }
    }
  }
  MemoryKeyspace keyspace;
  std::vector<std::unique_ptr<Side>> sides = [this] {
    std::vector<std::unique_ptr<Side>> v;
    for (int n = 0; n < 3; ++n) v.push_back(std::make_unique<Side>(&keyspace, n, 100 * (n + 1), 6));
    return v;
  }();
  std::vector<std::vector<NodeProgress>> seen{3};
  const double start = unix_now_s();
};

TEST_F(DigestExchangeTest, OneNodeReadsTheStampsAndTheOthersItsDigestForTheSameView) {
  rounds(3, start);
  EXPECT_TRUE(sides[0]->exchange.leading());
  EXPECT_FALSE(sides[1]->exchange.leading());
  const uint64_t stamp_reads[] = {sides[0]->exchange.stamp_reads(),
                                  sides[1]->exchange.stamp_reads(),
                                  sides[2]->exchange.stamp_reads()};
  rounds(2, start + 1);
  EXPECT_EQ(sides[0]->exchange.stamp_reads(), stamp_reads[0] + 2);
  for (int s : {1, 2}) {
    EXPECT_EQ(sides[s]->exchange.stamp_reads(), stamp_reads[s]) << s;
    EXPECT_GE(sides[s]->exchange.digest_reads(), 2u) << s;
    ASSERT_EQ(seen[s].size(), 2u) << s;
  }
  // Node 2 sees what the leader sees of node 1, its times no later.
  const NodeProgress& by_leader = seen[0][0];
  const NodeProgress& by_digest = seen[2][1];
  ASSERT_EQ(by_leader.node, 1);
  ASSERT_EQ(by_digest.node, 1);
  EXPECT_EQ(by_digest.doc, by_leader.doc);
  EXPECT_LE(by_digest.snapshot.now_ns, by_leader.snapshot.now_ns);
  EXPECT_GE(by_digest.snapshot.now_ns + static_cast<uint64_t>((kPlainLagS + kClockSlackS) * 1e9),
            by_leader.snapshot.now_ns);
  // The job as the leader and as node 2 see it: the same ranks, the same
  // collectives in flight.
  const Snapshot a =
      merge_job_snapshot(progress_of_six(0, start + 1, start).snapshot, 0, seen[0], 6);
  const Snapshot b =
      merge_job_snapshot(progress_of_six(2, start + 1, start).snapshot, 2, seen[2], 6);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    EXPECT_EQ(a.ranks[i].rank, b.ranks[i].rank);
    EXPECT_TRUE(b.ranks[i].registered);
    EXPECT_EQ(a.ranks[i].inflight_count, b.ranks[i].inflight_count);
    EXPECT_EQ(a.ranks[i].oldest_inflight.seq, b.ranks[i].oldest_inflight.seq);
  }
  // The leader's own stamp travels whole: its times are exact.
  const NodeProgress& leader_seen = seen[1][0];
  ASSERT_EQ(leader_seen.node, 0);
  EXPECT_EQ(leader_seen.snapshot.now_ns, progress_of_six(0, start + 1, start).snapshot.now_ns);
}

TEST_F(DigestExchangeTest, AStoppedHeartbeatTravelsWhole) {
  rounds(3, start);
  NodeProgress one = progress_of_six(1, start + 5, start);
  one.snapshot.ranks[1].heartbeat_ns = one.snapshot.now_ns - 4 * kS;
  std::vector<NodeProgress> others;
  ASSERT_TRUE(sides[1]->round(one, &others));
  ASSERT_TRUE(sides[0]->round(progress_of_six(0, start + 5, start), &others));
  const uint64_t digests = sides[2]->exchange.digest_reads();
  ASSERT_TRUE(sides[2]->round(progress_of_six(2, start + 5, start), &others));
  EXPECT_EQ(sides[2]->exchange.digest_reads(), digests + 1);
  ASSERT_EQ(others.size(), 2u);
  ASSERT_EQ(others[1].node, 1);
  EXPECT_EQ(others[1].snapshot.now_ns, one.snapshot.now_ns);
  EXPECT_EQ(others[1].snapshot.ranks[1].heartbeat_ns, one.snapshot.ranks[1].heartbeat_ns);
}

TEST_F(DigestExchangeTest, ALostLeaderIsReplacedOnceItsLeaseEnds) {
  rounds(3, start);
  ASSERT_TRUE(sides[0]->exchange.leading());
  keyspace.expire(100);  // node 0's supervisor is gone
  sides[0].reset();
  rounds(2, start + 1);
  EXPECT_TRUE(sides[1]->exchange.leading());
  const uint64_t digests = sides[2]->exchange.digest_reads();
  rounds(1, start + 2);
  EXPECT_EQ(sides[2]->exchange.digest_reads(), digests + 1);
  ASSERT_EQ(seen[2].size(), 1u);
  EXPECT_EQ(seen[2][0].node, 1);
}

TEST_F(DigestExchangeTest, AForgersLeaderKeyOrDigestIsIgnored) {
  // A leader key under a lease that owns no node: no one takes a digest,
  // every node reads the stamps itself.
  keyspace.put(kRoot + "/leader/node", "1", 666);
  keyspace.put(kRoot + "/leader/digest", "{\"format\":1}", 666);
  rounds(3, start);
  for (int s = 0; s < 3; ++s) {
    EXPECT_FALSE(sides[s]->exchange.leading());
    EXPECT_EQ(sides[s]->exchange.digest_reads(), 0u);
    EXPECT_EQ(seen[s].size(), 2u);
  }
  // A real leader, and a digest put over its own under another lease.
  keyspace.expire(666);
  rounds(2, start + 1);
  ASSERT_TRUE(sides[0]->exchange.leading());
  ProgressDigest lie;
  lie.leader = 0;
  lie.now_unix_s = lie.fresh_unix_s = unix_now_s();
  keyspace.put(kRoot + "/leader/digest", progress_digest_text(lie), 666);
  const uint64_t stamps = sides[2]->exchange.stamp_reads();
  std::vector<NodeProgress> others;
  ASSERT_TRUE(sides[2]->round(progress_of_six(2, start + 1, start), &others));
  EXPECT_EQ(sides[2]->exchange.stamp_reads(), stamps + 1);
  EXPECT_EQ(others.size(), 2u);
}

}  // namespace
}  // namespace xpu_timer::supervisor
