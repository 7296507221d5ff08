#include "supervisor/hang_detector.h"

#include <gtest/gtest.h>

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kSec = 1000000000ull;
constexpr uint64_t kNow = 1000 * kSec;
constexpr uint64_t kComm = 0x1a2b3c4d5e6f7a8bull;

RankSample healthy(int rank) {
  RankSample s;
  s.rank = rank;
  s.registered = true;
  s.local_rank = rank;
  s.pid = 1000 + rank;
  s.host = "node0";
  s.alive = true;
  s.connected = true;
  s.page_ok = true;
  s.registered_ns = kNow - 100 * kSec;
  s.heartbeat_ns = kNow - kSec / 100;
  s.issued_total = 50;
  s.completed_total = 50;
  return s;
}

proto::OpRef allreduce(uint64_t seq, uint64_t launched_ago_ns) {
  proto::OpRef op{};
  op.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  op.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  op.dtype = static_cast<uint8_t>(proto::DType::kBF16);
  op.group_size = 1;
  op.comm_hash = kComm;
  op.seq = seq;
  op.launch_ns = kNow - launched_ago_ns;
  op.started_ns = kNow - launched_ago_ns + kSec / 10;
  op.bytes = 1 << 20;
  return op;
}

// A rank waiting in AllReduce #seq on kComm since `ago`.
RankSample in_collective(int rank, uint64_t seq, uint64_t ago) {
  RankSample s = healthy(rank);
  s.issued_total = 51;
  s.inflight_count = 1;
  s.oldest_inflight = allreduce(seq, ago);
  s.comms.push_back(proto::CommSlot{kComm, 4, rank, seq, seq - 1, 0, 0});
  return s;
}

// A rank that never issued #seq (stopped in host code after #seq-1).
RankSample behind(int rank, uint64_t seq) {
  RankSample s = healthy(rank);
  s.comms.push_back(proto::CommSlot{kComm, 4, rank, seq - 1, seq - 1, 0, 0});
  return s;
}

Snapshot snapshot(std::vector<RankSample> ranks) {
  Snapshot snap;
  snap.now_ns = kNow;
  snap.now_unix_s = 1700000000.25;
  snap.ranks = std::move(ranks);
  return snap;
}

std::vector<int> ranks_in(const HangReport& r, RankState state) {
  std::vector<int> out;
  for (const RankVerdict& v : r.ranks) {
    if (v.state == state) out.push_back(v.rank);
  }
  return out;
}

const uint64_t k5_2s = 5 * kSec + kSec / 5;

TEST(HangDetector, StuckRanksAndTheMissingOneMakeOneSentence) {
  const Snapshot snap = snapshot({in_collective(0, 6, k5_2s), in_collective(1, 6, k5_2s),
                                  behind(2, 6), in_collective(3, 6, k5_2s)});
  const HangReport r = classify_snapshot(snap, 5.0);
  ASSERT_TRUE(r.hung);
  EXPECT_EQ(ranks_in(r, RankState::kStuck), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(ranks_in(r, RankState::kMissing), (std::vector<int>{2}));
  EXPECT_EQ(r.summary,
            "ranks 0,1,3 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; rank 2 missing "
            "(last completed #5 on that comm)");
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].missing, (std::vector<int>{2}));
  EXPECT_EQ(r.ranks[2].reason, MissingReason::kBehind);
  EXPECT_EQ(r.ranks[2].last_completed_seq, 5u);
  EXPECT_EQ(r.ranks[2].waited_seq, 6u);
  EXPECT_NEAR(r.ranks[0].pending_s, 5.2, 1e-9);
  EXPECT_NEAR(r.ranks[0].running_s, 5.1, 1e-9);
}

TEST(HangDetector, StragglerBelowTheTimeoutIsNoHang) {
  const Snapshot snap = snapshot({in_collective(0, 6, 4 * kSec), in_collective(1, 6, 4 * kSec),
                                  behind(2, 6), in_collective(3, 6, 4 * kSec)});
  const HangReport r = classify_snapshot(snap, 5.0);
  EXPECT_FALSE(r.hung);
  EXPECT_EQ(r.summary, "no hang");
  EXPECT_EQ(ranks_in(r, RankState::kOk), (std::vector<int>{0, 1, 2, 3}));
}

TEST(HangDetector, IdleRankOutsideTheCommunicatorIsMissingWithNoOperation) {
  RankSample other = healthy(2);  // knows no communicator, nothing in flight
  const Snapshot snap = snapshot({in_collective(0, 6, k5_2s), in_collective(1, 6, k5_2s), other});
  const HangReport r = classify_snapshot(snap, 5.0);
  EXPECT_EQ(r.summary,
            "ranks 0,1 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; rank 2 missing "
            "(no operation in flight)");
  EXPECT_EQ(r.ranks[2].reason, MissingReason::kIdle);
}

TEST(HangDetector, RankAlreadyInTheCollectiveButYoungIsOk) {
  const Snapshot snap = snapshot({in_collective(0, 6, k5_2s), in_collective(1, 6, kSec)});
  const HangReport r = classify_snapshot(snap, 5.0);
  EXPECT_EQ(ranks_in(r, RankState::kStuck), (std::vector<int>{0}));
  EXPECT_EQ(ranks_in(r, RankState::kOk), (std::vector<int>{1}));
  EXPECT_EQ(r.summary, "rank 0 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s");
}

TEST(HangDetector, UnresponsiveExitedAndNeverRegistered) {
  RankSample frozen = behind(2, 6);
  frozen.heartbeat_ns = kNow - 11 * kSec;  // max(10 s, 5 s) exceeded
  RankSample gone = behind(3, 6);
  gone.alive = false;
  RankSample never;
  never.rank = 4;
  const Snapshot snap =
      snapshot({in_collective(0, 6, k5_2s), in_collective(1, 6, k5_2s), frozen, gone, never});
  const HangReport r = classify_snapshot(snap, 5.0);
  EXPECT_EQ(ranks_in(r, RankState::kUnresponsive), (std::vector<int>{2}));
  EXPECT_EQ(ranks_in(r, RankState::kExited), (std::vector<int>{3}));
  EXPECT_EQ(ranks_in(r, RankState::kMissing), (std::vector<int>{4}));
  EXPECT_EQ(r.ranks[4].reason, MissingReason::kNeverRegistered);
  EXPECT_EQ(r.summary,
            "ranks 0,1 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; rank 4 missing "
            "(never registered); rank 2 unresponsive (no heartbeat for 11.0 s); rank 3 exited");
}

TEST(HangDetector, UnresponsiveAloneIsNoHang) {
  RankSample frozen = healthy(0);
  frozen.heartbeat_ns = kNow - 30 * kSec;
  const HangReport r = classify_snapshot(snapshot({frozen, healthy(1)}), 5.0);
  EXPECT_FALSE(r.hung);
  EXPECT_EQ(ranks_in(r, RankState::kUnresponsive), (std::vector<int>{0}));
}

TEST(HangDetector, StuckGemmHasNoCommunicator) {
  RankSample s = healthy(0);
  s.inflight_count = 1;
  s.oldest_inflight.name = static_cast<uint16_t>(proto::OpName::kGemmEx);
  s.oldest_inflight.kind = static_cast<uint8_t>(proto::OpKind::kGemm);
  s.oldest_inflight.launch_ns = kNow - 6 * kSec;
  const HangReport r = classify_snapshot(snapshot({s}), 5.0);
  EXPECT_EQ(r.summary, "rank 0 stuck in GemmEx for 6.0 s");
}

TEST(HangDetector, SeveralCommunicatorsMakeSeveralGroups) {
  RankSample other = in_collective(2, 3, 6 * kSec);
  other.oldest_inflight.comm_hash = 0xff;
  other.comms[0].comm_hash = 0xff;
  const Snapshot snap = snapshot({in_collective(0, 6, k5_2s), in_collective(1, 6, k5_2s), other});
  const HangReport r = classify_snapshot(snap, 5.0);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.summary,
            "ranks 0,1 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; rank 2 stuck in "
            "AllReduce #3 on comm 00000000000000ff for 6.0 s");
}

TEST(HangDetector, LargeRankSetsAreFolded) {
  std::vector<RankSample> ranks;
  for (int i = 0; i < 16; ++i) {
    ranks.push_back(i == 9 ? behind(i, 6) : in_collective(i, 6, k5_2s));
  }
  const HangReport r = classify_snapshot(snapshot(ranks), 5.0);
  EXPECT_EQ(r.summary,
            "ranks 0-8/10-15 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; rank 9 "
            "missing (last completed #5 on that comm)");
}

TEST(HangDetector, DetectsOnceReportsChangesAndClearsOnProgress) {
  HangDetector d(5.0);
  EXPECT_EQ(d.update(snapshot({in_collective(0, 6, kSec), behind(1, 6)})), HangEvent::kNone);
  EXPECT_FALSE(d.report().hung);
  EXPECT_EQ(d.update(snapshot({in_collective(0, 6, k5_2s), behind(1, 6)})), HangEvent::kDetected);
  ASSERT_TRUE(d.report().detected_at_unix_s.has_value());
  EXPECT_DOUBLE_EQ(*d.report().detected_at_unix_s, 1700000000.25);
  // Same situation a bit later: no new event, same detection time.
  EXPECT_EQ(d.update(snapshot({in_collective(0, 6, 7 * kSec), behind(1, 6)})), HangEvent::kNone);
  // Rank 1 arrives but its op is young, rank 0 still stuck: the sentence changes.
  EXPECT_EQ(d.update(snapshot({in_collective(0, 6, 8 * kSec), in_collective(1, 6, kSec)})),
            HangEvent::kChanged);
  // Both completed #6: cleared.
  RankSample done0 = healthy(0);
  done0.completed_total = 51;
  EXPECT_EQ(d.update(snapshot({done0, healthy(1)})), HangEvent::kCleared);
  EXPECT_FALSE(d.report().hung);
  EXPECT_FALSE(d.report().detected_at_unix_s.has_value());
}

TEST(HangDetector, HangStaysReportedWhenTheStuckRanksDieWithoutProgress) {
  HangDetector d(5.0);
  ASSERT_EQ(d.update(snapshot({in_collective(0, 6, k5_2s), behind(1, 6)})), HangEvent::kDetected);
  RankSample dead = in_collective(0, 6, 9 * kSec);
  dead.alive = false;
  RankSample dead1 = behind(1, 6);
  dead1.alive = false;
  EXPECT_EQ(d.update(snapshot({dead, dead1})), HangEvent::kNone);
  EXPECT_TRUE(d.report().hung);
  EXPECT_EQ(d.report().summary,
            "rank 0 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; rank 1 missing "
            "(last completed #5 on that comm)");
}

TEST(HangDetector, RestartedRankClearsTheHang) {
  HangDetector d(5.0);
  ASSERT_EQ(d.update(snapshot({in_collective(0, 6, k5_2s)})), HangEvent::kDetected);
  RankSample fresh = healthy(0);
  fresh.pid = 4242;
  fresh.completed_total = 0;
  EXPECT_EQ(d.update(snapshot({fresh})), HangEvent::kCleared);
}

}  // namespace
}  // namespace xpu_timer::supervisor
