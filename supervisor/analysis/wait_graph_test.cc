// The wait-for graph of a hang across communicators (wait_graph.h): the
// roots named first, then who waits on them.
#include "supervisor/analysis/wait_graph.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/op_names.h"
#include "supervisor/analysis/hang_detector.h"

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kSec = 1000000000ull;
constexpr uint64_t kNow = 1000 * kSec;
constexpr uint64_t kTp01 = 0x46a42d0625321e38ull, kTp23 = 0x29910e90c8e99933ull;
constexpr uint64_t kDp02 = 0x6c0a24ef172edbc8ull, kDp13 = 0x7d1b35f0283fecd9ull;

proto::CommSlot slot(uint64_t comm, int rank_in_comm, uint64_t issued, uint64_t completed,
                     const char* name) {
  proto::CommSlot c{comm, 2, rank_in_comm, issued, completed, 0, 0, {}};
  std::strncpy(c.name, name, sizeof(c.name) - 1);
  return c;
}

RankSample rank_sample(int rank) {
  RankSample s;
  s.rank = rank;
  s.registered = true;
  s.local_rank = rank;
  s.pid = 1000 + rank;
  s.alive = true;
  s.connected = true;
  s.page_ok = true;
  s.registered_ns = kNow - 100 * kSec;
  s.heartbeat_ns = kNow - kSec / 100;
  return s;
}

// Stuck in AllReduce #seq of `comm` for 15 s.
void stuck_in(RankSample* s, uint64_t comm, uint64_t seq) {
  s->inflight_count = 1;
  proto::OpRef& op = s->oldest_inflight;
  op.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  op.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  op.comm_hash = comm;
  op.seq = seq;
  op.started_ns = kNow - 15 * kSec;
  op.launch_ns = op.started_ns - kSec / 10;
}

Snapshot snapshot(std::vector<RankSample> ranks) {
  Snapshot snap;
  snap.now_ns = kNow;
  snap.now_unix_s = 1700000000;
  snap.ranks = std::move(ranks);
  return snap;
}

// The job of the real run (2 x 2 tensor x data parallel): rank 3 waits in
// Python before tp all-reduce #21; rank 2 waits for it in tp #21, rank 1 in
// dp #21 (rank 3 never issued dp #21), rank 0 in dp #21 for rank 2, which is
// stuck in tp and never issued dp #21.
Snapshot tp_dp_hang() {
  RankSample r0 = rank_sample(0), r1 = rank_sample(1), r2 = rank_sample(2), r3 = rank_sample(3);
  r0.comms = {slot(kTp01, 0, 21, 21, "tp"), slot(kDp02, 0, 21, 20, "dp")};
  r1.comms = {slot(kTp01, 1, 21, 21, "tp"), slot(kDp13, 0, 21, 20, "dp")};
  r2.comms = {slot(kTp23, 0, 21, 20, "tp"), slot(kDp02, 1, 20, 20, "dp")};
  r3.comms = {slot(kTp23, 1, 20, 20, "tp"), slot(kDp13, 1, 20, 20, "dp")};
  stuck_in(&r0, kDp02, 21);
  stuck_in(&r1, kDp13, 21);
  stuck_in(&r2, kTp23, 21);
  r3.where = {CodeFrame{"wait_for_shard_from_storage", "tpdp.py", 15, true},
              CodeFrame{"<module>", "tpdp.py", 17, true}};
  return snapshot({r0, r1, r2, r3});
}

TEST(WaitGraph, TheRootLeadsAndTheChainFollows) {
  const HangReport r = classify_snapshot(tp_dp_hang(), 5.0);
  ASSERT_TRUE(r.hung);
  ASSERT_EQ(r.roots.size(), 1u);
  EXPECT_EQ(r.roots[0].kind, RootKind::kRank);
  EXPECT_EQ(r.roots[0].ranks, (std::vector<int>{3}));
  ASSERT_EQ(r.roots[0].waiters.size(), 2u);
  EXPECT_EQ(r.roots[0].waiters[0], (std::vector<int>{1, 2}));
  EXPECT_EQ(r.roots[0].waiters[1], (std::vector<int>{0}));
  ASSERT_EQ(r.ranks[0].waits_for.size(), 1u);
  EXPECT_EQ(r.ranks[0].waits_for[0].rank, 2);
  EXPECT_EQ(r.ranks[0].waits_for[0].comm_name, "dp");
  ASSERT_EQ(r.ranks[2].waits_for.size(), 1u);
  EXPECT_EQ(r.ranks[2].waits_for[0].rank, 3);
  EXPECT_EQ(r.ranks[2].waits_for[0].comm_hash, kTp23);
  EXPECT_TRUE(r.ranks[3].waits_for.empty());
  EXPECT_EQ(r.summary,
            "rank 3 missing (last completed #20 on comm 7d1b35f0283fecd9 (dp)), in "
            "wait_for_shard_from_storage (tpdp.py:15) <- <module> (tpdp.py:17); waiting on it: "
            "rank 1 in AllReduce #21 on dp, rank 2 in "
            "AllReduce #21 on tp; behind them: rank 0 in AllReduce #21 on dp");
}

// The world and its split into {0,2} and {1,3}: rank 3 stops before split
// #6, after world #6. Rank 1 waits for it in split #6; ranks 0 and 2 finish
// theirs and, a step later, wait in world #7. Rank 3 is told by what it did
// last (world #6), whichever of ranks 0 and 2 has passed the timeout when the
// snapshot is taken; without a last collective, by the groups' order.
TEST(WaitGraph, AMissingRankIsToldByItsLastCompletedCollective) {
  constexpr uint64_t kWorld = 0x5151515151515151ull;
  for (const bool knows_last : {true, false}) {
    for (uint64_t rank0_running_s : {14, 4}) {
      RankSample r0 = rank_sample(0), r1 = rank_sample(1), r2 = rank_sample(2), r3 = rank_sample(3);
      r0.comms = {slot(kWorld, 0, 7, 6, "world"), slot(kDp02, 0, 6, 6, "world_split")};
      r2.comms = {slot(kWorld, 2, 7, 6, "world"), slot(kDp02, 1, 6, 6, "world_split")};
      r1.comms = {slot(kWorld, 1, 6, 6, "world"), slot(kDp13, 0, 6, 5, "world_split")};
      r3.comms = {slot(kWorld, 3, 6, 6, "world"), slot(kDp13, 1, 5, 5, "world_split")};
      stuck_in(&r1, kDp13, 6);
      for (RankSample* s : {&r0, &r2}) stuck_in(s, kWorld, 7);
      r0.oldest_inflight.started_ns = kNow - rank0_running_s * kSec;
      if (knows_last) {
        stuck_in(&r3, kWorld, 6);  // the op, then nothing in flight
        r3.last_completed = r3.oldest_inflight;
        r3.oldest_inflight = {};
        r3.inflight_count = 0;
        r3.completed_total = 60;
      }
      const HangReport r = classify_snapshot(snapshot({r0, r1, r2, r3}), 5.0);
      ASSERT_EQ(r.roots.size(), 1u) << r.summary;
      EXPECT_EQ(r.roots[0].ranks, (std::vector<int>{3}));
      const std::string waiting =
          "; waiting on it: ranks 0/2 in AllReduce #7 on world, rank 1 in AllReduce #6 on "
          "world_split";
      // Without its last collective, the groups' order decides: the world's
      // group leads only while rank 0, its lowest rank, has passed the timeout.
      const bool world = knows_last || rank0_running_s == 14;
      const std::string clause =
          world ? "rank 3 missing (last completed #6 on comm 5151515151515151 (world))"
                : "rank 3 missing (last completed #5 on comm 7d1b35f0283fecd9 (world_split))";
      EXPECT_EQ(r.summary, clause + waiting)
          << "knows its last: " << knows_last << ", rank 0 in world #7 for " << rank0_running_s
          << " s";
    }
  }
}

// A rank that runs a collective its peers are stuck in is stuck with them,
// even when it is behind on the communicator of its last collective, where
// another rank waits for it: rank 2 entered world #7 a second ago (rank 0
// has waited there 15 s) and never issued split #6 (rank 1 waits there).
TEST(WaitGraph, ARankInTheStuckCollectiveIsStuckThoughBehindElsewhere) {
  constexpr uint64_t kWorld = 0x5151515151515151ull;
  RankSample r0 = rank_sample(0), r1 = rank_sample(1), r2 = rank_sample(2);
  r0.comms = {slot(kWorld, 0, 7, 6, "world")};
  r1.comms = {slot(kWorld, 1, 6, 6, "world"), slot(kDp13, 0, 6, 5, "split")};
  r2.comms = {slot(kWorld, 2, 7, 6, "world"), slot(kDp13, 1, 5, 5, "split")};
  stuck_in(&r0, kWorld, 7);
  stuck_in(&r1, kDp13, 6);
  stuck_in(&r2, kDp13, 5);  // its last collective: split #5, then world #7
  r2.last_completed = r2.oldest_inflight;
  r2.completed_total = 60;
  stuck_in(&r2, kWorld, 7);
  r2.oldest_inflight.started_ns = kNow - kSec;
  const HangReport r = classify_snapshot(snapshot({r0, r1, r2}), 5.0);
  ASSERT_TRUE(r.hung);
  EXPECT_EQ(r.ranks[2].state, RankState::kStuck) << r.summary;
  EXPECT_EQ(r.ranks[1].state, RankState::kStuck) << r.summary;
  ASSERT_EQ(r.ranks[2].waits_for.size(), 1u) << r.summary;
  EXPECT_EQ(r.ranks[2].waits_for[0].rank, 1) << r.summary;
}

// A deadlock by order: rank 0 waits for rank 1 in tp while rank 1 waits for
// rank 0 in dp, each having issued the other collective after its own.
TEST(WaitGraph, ACycleIsADeadlockByOrder) {
  RankSample r0 = rank_sample(0), r1 = rank_sample(1);
  r0.comms = {slot(kTp01, 0, 5, 4, "tp"), slot(kDp02, 0, 5, 4, "dp")};
  r1.comms = {slot(kTp01, 1, 4, 4, "tp"), slot(kDp02, 1, 5, 4, "dp")};
  r0.comms[1].issued_seq = 4;  // rank 0 has not issued dp #5: it is stuck in tp #5 before it
  stuck_in(&r0, kTp01, 5);
  stuck_in(&r1, kDp02, 5);
  const HangReport r = classify_snapshot(snapshot({r0, r1}), 5.0);
  ASSERT_TRUE(r.hung);
  ASSERT_EQ(r.roots.size(), 1u) << r.summary;
  EXPECT_EQ(r.roots[0].kind, RootKind::kCycle);
  EXPECT_EQ(r.roots[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(r.summary,
            "deadlock by order among ranks 0-1: rank 0 waits for rank 1 in AllReduce #5 on tp, "
            "rank 1 waits for rank 0 in AllReduce #5 on dp");
}

// Every member in the collective and nobody to wait for: the collective itself.
TEST(WaitGraph, ACollectiveWithEveryMemberInItIsItsOwnRoot) {
  RankSample r0 = rank_sample(0), r1 = rank_sample(1);
  r0.comms = {slot(kTp01, 0, 5, 4, "tp")};
  r1.comms = {slot(kTp01, 1, 5, 4, "tp")};
  stuck_in(&r0, kTp01, 5);
  stuck_in(&r1, kTp01, 5);
  const HangReport r = classify_snapshot(snapshot({r0, r1}), 5.0);
  ASSERT_EQ(r.roots.size(), 1u);
  EXPECT_EQ(r.roots[0].kind, RootKind::kCollective);
  EXPECT_EQ(r.roots[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_TRUE(r.roots[0].waiters.empty());
}

// One communicator, one level: the verdict keeps its familiar shape, and
// the root is still the missing rank.
TEST(WaitGraph, OneCommunicatorKeepsTheSentenceAndNamesTheRoot) {
  RankSample r0 = rank_sample(0), r1 = rank_sample(1), r2 = rank_sample(2);
  for (RankSample* s : {&r0, &r1}) {
    s->comms = {slot(kTp01, s->rank, 6, 5, "")};
    stuck_in(s, kTp01, 6);
  }
  r2.comms = {slot(kTp01, 2, 5, 5, "")};
  const HangReport r = classify_snapshot(snapshot({r0, r1, r2}), 5.0);
  ASSERT_EQ(r.roots.size(), 1u);
  EXPECT_EQ(r.roots[0].ranks, (std::vector<int>{2}));
  EXPECT_EQ(r.roots[0].waiters, (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_FALSE(wait_graph_is_deep(r));
  EXPECT_EQ(r.summary.rfind("ranks 0,1 stuck in AllReduce #6 on comm 46a42d0625321e38 for ", 0), 0u)
      << r.summary;
}

// A world of 4 on two nodes, one communicator of all 4 (kWorld): node 1
// (ranks 2, 3) not heard from for 10 s, its ranks as its last news left them
// (a stale heartbeat, an old collective number): news newer than the 15 s
// the others have waited in collective #6.
constexpr uint64_t kWorld = 0x1234abcd5678ef90ull;

Snapshot silent_node_1(bool rank1_behind) {
  std::vector<RankSample> ranks;
  for (int r = 0; r < 4; ++r) {
    RankSample s = rank_sample(r);
    s.node = r / 2;
    proto::CommSlot c = slot(kWorld, r, 6, 5, "world");
    c.nranks = 4;
    s.comms = {c};
    if (r < 2) stuck_in(&s, kWorld, 6);
    if (r >= 2) {
      s.silent_s = 10;
      s.page_ok = false;
      s.heartbeat_ns = kNow - 10 * kSec;                     // old news: would read unresponsive
      s.comms[0].issued_seq = s.comms[0].completed_seq = 3;  // would read behind
    }
    ranks.push_back(s);
  }
  if (rank1_behind) {
    ranks[1].inflight_count = 0;
    ranks[1].oldest_inflight = proto::OpRef{};
    ranks[1].comms[0].issued_seq = ranks[1].comms[0].completed_seq = 5;
  }
  return snapshot(ranks);
}

// silent_node_1 with node 1 heard from: its ranks 2 and 3 no longer silent.
Snapshot node_1_heard() {
  Snapshot snap = silent_node_1(false);
  for (int r : {2, 3}) {
    snap.ranks[r].silent_s = 0;
    snap.ranks[r].page_ok = true;
    snap.ranks[r].heartbeat_ns = kNow;
  }
  return snap;
}

// Node 1's news after silent_node_1: rank 3 in the collective with ranks 0
// and 1, rank 2 behind it with nothing in flight.
Snapshot node_1_news_rank_2_behind() {
  Snapshot news = node_1_heard();
  for (int r : {2, 3}) {
    RankSample& s = news.ranks[r];
    s.comms[0].issued_seq = r == 3 ? 6 : 5;
    s.comms[0].completed_seq = 5;
    if (r == 3) stuck_in(&s, kWorld, 6);
  }
  news.ranks[2].inflight_count = 0;
  news.ranks[2].oldest_inflight = proto::OpRef{};
  return news;
}

// A detector given `pending` declares nothing; node 1's news then makes rank
// 2 the one root.
void expect_no_verdict_before_node_1_news(const Snapshot& pending) {
  HangDetector d(5.0);
  EXPECT_EQ(d.update(pending), HangEvent::kNone);
  EXPECT_FALSE(d.report().hung);
  EXPECT_EQ(d.update(node_1_news_rank_2_behind()), HangEvent::kDetected);
  ASSERT_EQ(d.report().roots.size(), 1u);
  EXPECT_EQ(d.report().roots[0].ranks, std::vector<int>{2});
}

// A detector given `pending` declares nothing; once node 1's news can no
// longer come (the bound passed), it declares on what `pending` says.
HangReport detected_once_the_bound_passes(const Snapshot& pending) {
  Snapshot late = pending;
  for (RankSample& s : late.ranks) s.news_pending = false;
  HangDetector d(5.0);
  EXPECT_EQ(d.update(pending), HangEvent::kNone);
  EXPECT_EQ(d.update(late), HangEvent::kDetected);
  return d.report();
}

TEST(WaitGraph, ASilentNodesRanksAreNotJudgedWhenAnotherRankExplainsTheWait) {
  const HangReport r = classify_snapshot(silent_node_1(/*rank1_behind=*/true), 5.0);
  ASSERT_TRUE(r.hung);
  EXPECT_EQ(r.ranks[2].state, RankState::kSilent);
  EXPECT_EQ(r.ranks[3].state, RankState::kSilent);
  EXPECT_DOUBLE_EQ(r.ranks[2].silent_s, 10);
  ASSERT_EQ(r.roots.size(), 1u);
  EXPECT_EQ(r.roots[0].ranks, std::vector<int>{1});
  EXPECT_FALSE(is_root_rank(r, 2));
  EXPECT_EQ(r.summary,
            "rank 0 stuck in AllReduce #6 on comm 1234abcd5678ef90 (world) for 15.0 s; rank 1 "
            "missing (last completed #5 on that comm); node 1 not heard from for 10.0 s (ranks "
            "2-3)");
  // The durations aside, the verdict does not change while the node stays
  // silent.
  EXPECT_EQ(hang_sentence(r, false),
            "rank 0 stuck in AllReduce #6 on comm 1234abcd5678ef90 (world); rank 1 missing (last "
            "completed #5 on that comm); node 1 not heard from (ranks 2-3)");
}

TEST(WaitGraph, ASilentNodeIsTheRootWhenNoRankHeardFromExplainsTheWait) {
  const HangReport r = classify_snapshot(silent_node_1(/*rank1_behind=*/false), 5.0);
  ASSERT_TRUE(r.hung);
  ASSERT_EQ(r.roots.size(), 2u);
  EXPECT_EQ(r.roots[0].ranks, std::vector<int>{2});
  EXPECT_EQ(r.roots[1].ranks, std::vector<int>{3});
  EXPECT_EQ(r.roots[0].waiters, (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_EQ(r.summary,
            "ranks 0,1 stuck in AllReduce #6 on comm 1234abcd5678ef90 (world) for 15.0 s; node 1 "
            "not heard from for 10.0 s (ranks 2-3)");
  // A member of another communicator only is no root: a rank of node 1 that
  // was in no collective with them is not waited for.
  Snapshot snap = silent_node_1(false);
  snap.ranks[3].comms.clear();
  const HangReport other = classify_snapshot(snap, 5.0);
  ASSERT_EQ(other.roots.size(), 1u);
  EXPECT_EQ(other.roots[0].ranks, std::vector<int>{2});
}

// A silent node whose ranks had issued the collective when last heard of
// (the 128-node job: most nodes fell silent while one rank hung): they were
// in it, so only its member known to be behind is waited for; with none
// behind, or news older than the wait, the collective itself is the root and
// the silent node is named as not heard from, never its ranks as roots.
TEST(WaitGraph, SilentMembersThatHadIssuedTheCollectiveAreNotRoots) {
  Snapshot snap = silent_node_1(/*rank1_behind=*/false);
  snap.ranks[2].comms[0].issued_seq = 6;  // in #6 when last heard of
  snap.ranks[3].comms[0].issued_seq = 5;  // behind: #6 not issued
  const HangReport behind = classify_snapshot(snap, 5.0);
  ASSERT_TRUE(behind.hung);
  ASSERT_EQ(behind.roots.size(), 1u);
  EXPECT_EQ(behind.roots[0].ranks, std::vector<int>{3});
  EXPECT_EQ(behind.ranks[0].waits_for.size(), 1u);
  EXPECT_FALSE(is_root_rank(behind, 2));

  // News older than the wait cannot tell: rank 3 may have issued #6 since
  // (a node whose supervisor died while its ranks ran on, an observer cut
  // off from the store): no rank is named for it.
  Snapshot stale = snap;
  for (RankSample& s : stale.ranks) {
    if (s.silent_s > 0) s.silent_s = 40;
  }
  const HangReport old_news = classify_snapshot(stale, 5.0);
  ASSERT_EQ(old_news.roots.size(), 1u);
  EXPECT_EQ(old_news.roots[0].kind, RootKind::kCollective);
  EXPECT_FALSE(is_root_rank(old_news, 3));
  EXPECT_NE(old_news.summary.find("node 1 not heard from for 40.0 s"), std::string::npos)
      << old_news.summary;

  snap.ranks[3].comms[0].issued_seq = 6;
  const HangReport none_behind = classify_snapshot(snap, 5.0);
  ASSERT_TRUE(none_behind.hung);
  ASSERT_EQ(none_behind.roots.size(), 1u);
  EXPECT_EQ(none_behind.roots[0].kind, RootKind::kCollective);
  EXPECT_EQ(none_behind.roots[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_TRUE(none_behind.ranks[0].waits_for.empty());
  EXPECT_NE(none_behind.summary.find("node 1 not heard from"), std::string::npos)
      << none_behind.summary;
}

// The 1,024-rank job on a loaded machine: a collective's waiters got there
// at different times, and a silent member's news came between the first
// and the last. Every waiter is judged against the collective's first wait,
// so all of them wait for it: one root, never the late waiters as a
// collective of their own beside it.
TEST(WaitGraph, EveryWaiterOfACollectiveJudgesASilentMemberAlike) {
  Snapshot snap = silent_node_1(/*rank1_behind=*/false);
  snap.ranks[2].comms[0].issued_seq = 6;               // in #6 when last heard of
  snap.ranks[3].comms[0].issued_seq = 5;               // behind: #6 not issued
  proto::OpRef& late = snap.ranks[1].oldest_inflight;  // waits 4 s, rank 0 15 s
  late.started_ns = kNow - 4 * kSec;
  late.launch_ns = late.started_ns - kSec / 10;
  const HangReport r = classify_snapshot(snap, 3.0);
  ASSERT_TRUE(r.hung);
  EXPECT_LT(r.ranks[1].pending_s, r.ranks[3].silent_s);
  ASSERT_EQ(r.roots.size(), 1u) << r.summary;
  EXPECT_EQ(r.roots[0].ranks, std::vector<int>{3});
  EXPECT_EQ(r.roots[0].waiters, (std::vector<std::vector<int>>{{0, 1}}));
}

// A silent node heard of 3 s ago by its lease, whose last news of its ranks
// is 40 s old (older than the wait): that news cannot tell, whatever the
// lease says.
TEST(WaitGraph, ALeaseSeenSinceDoesNotMakeOldNewsNew) {
  Snapshot snap = silent_node_1(/*rank1_behind=*/false);
  for (RankSample& s : snap.ranks) {
    if (s.silent_s > 0) {
      s.silent_s = 3;
      s.news_age_s = 40;
    }
  }
  const HangReport r = classify_snapshot(snap, 5.0);
  ASSERT_TRUE(r.hung);
  ASSERT_EQ(r.roots.size(), 1u) << r.summary;
  EXPECT_EQ(r.roots[0].kind, RootKind::kCollective);
  EXPECT_FALSE(is_root_rank(r, 2));
  EXPECT_FALSE(is_root_rank(r, 3));
  // Its news 10 s old, newer than the 15 s wait: its ranks behind are roots.
  for (RankSample& s : snap.ranks) {
    if (s.silent_s > 0) s.news_age_s = 10;
  }
  const HangReport newer = classify_snapshot(snap, 5.0);
  ASSERT_EQ(newer.roots.size(), 2u) << newer.summary;
  EXPECT_TRUE(is_root_rank(newer, 2));
}

// The first rounds of an alarm: node 1 was heard from 2 s ago and its news
// is on its way. The hang that would rest on its ranks waits for it: news
// that node 1's rank 2 never joined makes rank 2 the one root; a node that
// stays silent past the bound is then a root as before.
TEST(WaitGraph, ANewHangRestingOnPendingNewsWaitsForIt) {
  Snapshot pending = silent_node_1(false);
  for (RankSample& s : pending.ranks) {
    if (s.silent_s > 0) {
      s.silent_s = 2;
      s.news_pending = true;
    }
  }
  expect_no_verdict_before_node_1_news(pending);
  // No news within the bound: a silent root as before.
  HangDetector late(5.0);
  EXPECT_EQ(late.update(pending), HangEvent::kNone);
  EXPECT_EQ(late.update(silent_node_1(false)), HangEvent::kDetected);
  EXPECT_EQ(late.report().roots.size(), 2u);
}

// A busy node's supervisor published late: node 1 was heard from 2 s ago,
// but its last news of its ranks is older than the wait and cannot say
// whether they joined, so the waiters would be their own root. The news on
// its way decides: no verdict before it (or before the bound passes).
TEST(WaitGraph, ACollectiveRootWithAMemberWhoseNewsIsOnItsWayWaitsForIt) {
  Snapshot pending = silent_node_1(false);
  for (RankSample& s : pending.ranks) {
    if (s.silent_s > 0) {
      s.silent_s = 2;
      s.news_age_s = 40;
      s.news_pending = true;
    }
  }
  ASSERT_EQ(classify_snapshot(pending, 5.0).roots.size(), 1u);
  ASSERT_EQ(classify_snapshot(pending, 5.0).roots[0].kind, RootKind::kCollective);
  expect_no_verdict_before_node_1_news(pending);
  // The bound passed without news: the collective is the root.
  const HangReport late = detected_once_the_bound_passes(pending);
  ASSERT_EQ(late.roots.size(), 1u);
  EXPECT_EQ(late.roots[0].kind, RootKind::kCollective);
}

// Node 1 is heard from, but its last snapshot of ranks 2 and 3 (behind, at
// #3) is older than the wait of ranks 0 and 1 in #6: it cannot say whether
// they issued #6 since, and its newer news is on its way (a busy node
// answers an alarm late). Named missing on it, rank 2 would be blamed a
// round before node 1's news clears it (a multi-node e2e test under load).
TEST(WaitGraph, ARankNamedBehindOnNewsOlderThanTheWaitWaitsForItsNews) {
  Snapshot dated = node_1_heard();
  for (int r : {2, 3}) {
    dated.ranks[r].news_age_s = 20;  // the waiters have waited 15 s
    dated.ranks[r].news_pending = true;
  }
  const HangReport r = classify_snapshot(dated, 5.0);
  ASSERT_TRUE(r.hung);
  ASSERT_EQ(r.ranks[2].state, RankState::kMissing);
  expect_no_verdict_before_node_1_news(dated);
  // The bound passed without news: judged on what is known.
  EXPECT_EQ(detected_once_the_bound_passes(dated).ranks[2].state, RankState::kMissing);
  // News taken after the wait began is evidence: no waiting for more.
  Snapshot recent = dated;
  for (int r : {2, 3}) recent.ranks[r].news_age_s = 1;
  HangDetector d2(5.0);
  EXPECT_EQ(d2.update(recent), HangEvent::kDetected);
  EXPECT_EQ(d2.report().ranks[2].state, RankState::kMissing);
}

TEST(WaitGraph, ADeepVerdictNamesASilentNodeOnceAmongItsRoots) {
  // Rank 0 (in no world collective) waits in tp for rank 1, which waits in
  // the world collective for node 1's ranks (silent).
  constexpr uint64_t kTp = 0x0a0b0c0d0e0f1011ull;
  Snapshot snap = silent_node_1(false);
  snap.ranks[0].comms = {slot(kTp, 0, 2, 1, "tp")};
  snap.ranks[1].comms.push_back(slot(kTp, 1, 1, 1, "tp"));
  stuck_in(&snap.ranks[0], kTp, 2);
  const HangReport r = classify_snapshot(snap, 5.0);
  ASSERT_TRUE(r.hung);
  EXPECT_EQ(r.summary,
            "node 1 not heard from for 10.0 s (ranks 2-3); waiting on it: rank 1 in AllReduce #6 "
            "on world; behind them: rank 0 in AllReduce #2 on tp");
}

}  // namespace
}  // namespace xpu_timer::supervisor
