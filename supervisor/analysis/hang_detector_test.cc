#include "supervisor/analysis/hang_detector.h"

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

// AllReduce #seq that started on the GPU `running_ns` ago (0: not started),
// launched `queued_ns` before it could start (or before now when it did not).
proto::OpRef allreduce(uint64_t seq, uint64_t running_ns, uint64_t queued_ns = kSec / 10) {
  proto::OpRef op{};
  op.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  op.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  op.dtype = static_cast<uint8_t>(proto::DType::kBF16);
  op.group_size = 1;
  op.comm_hash = kComm;
  op.seq = seq;
  op.started_ns = running_ns != 0 ? kNow - running_ns : 0;
  op.launch_ns = kNow - running_ns - queued_ns;
  op.bytes = 1 << 20;
  return op;
}

// A rank waiting in AllReduce #seq on kComm, running on its GPU since `ago`.
RankSample in_collective(int rank, uint64_t seq, uint64_t ago) {
  RankSample s = healthy(rank);
  s.issued_total = 51;
  s.inflight_count = 1;
  s.oldest_inflight = allreduce(seq, ago);
  s.comms.push_back(proto::CommSlot{kComm, 4, rank, seq, seq - 1, 0, 0, {}});
  return s;
}

// A rank that issued AllReduce #seq `queued` ago; its GPU has not started it
// (the work before it on its stream has not finished).
RankSample queued_in_collective(int rank, uint64_t seq, uint64_t queued) {
  RankSample s = in_collective(rank, seq, 0);
  s.oldest_inflight = allreduce(seq, 0, queued);
  return s;
}

// A rank that never issued #seq (stopped in host code after #seq-1).
RankSample behind(int rank, uint64_t seq) {
  RankSample s = healthy(rank);
  s.comms.push_back(proto::CommSlot{kComm, 4, rank, seq - 1, seq - 1, 0, 0, {}});
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
  EXPECT_NEAR(r.ranks[0].pending_s, 5.3, 1e-9);
  EXPECT_NEAR(r.ranks[0].running_s, 5.2, 1e-9);
  EXPECT_FALSE(r.ranks[0].not_started);
  EXPECT_NEAR(r.groups[0].waiting_s, 5.2, 1e-9);
  EXPECT_NEAR(r.groups[0].pending_s, 5.3, 1e-9);
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

TEST(HangDetector, RankInTheStuckCollectiveForLessThanTheTimeoutIsStuckWithItsPeers) {
  // Rank 1 entered AllReduce #6 later than rank 0: it waits in the same
  // collective for the same missing rank, and is not healthy for that.
  const Snapshot snap =
      snapshot({in_collective(0, 6, k5_2s), in_collective(1, 6, kSec), behind(2, 6)});
  const HangReport r = classify_snapshot(snap, 5.0);
  EXPECT_EQ(ranks_in(r, RankState::kStuck), (std::vector<int>{0, 1}));
  EXPECT_EQ(ranks_in(r, RankState::kOk), (std::vector<int>{}));
  EXPECT_EQ(r.summary,
            "ranks 0,1 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; rank 2 missing "
            "(last completed #5 on that comm)");
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_NEAR(r.ranks[1].running_s, 1.0, 1e-9);
  // Alone in a collective below the timeout is still no hang.
  EXPECT_FALSE(classify_snapshot(snapshot({in_collective(1, 6, kSec), behind(2, 6)}), 5.0).hung);
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
  s.oldest_inflight.launch_ns = kNow - 7 * kSec;
  s.oldest_inflight.started_ns = kNow - 6 * kSec;
  const HangReport r = classify_snapshot(snapshot({s}), 5.0);
  EXPECT_EQ(r.summary, "rank 0 stuck in GemmEx for 6.0 s");
}

// The hang clock (docs/architecture.md "Hang detection") starts when the
// operation could start, not at launch: a collective queued behind 12 s of
// GPU work is no hang under a 5 s timeout, nor once it runs for 4 s; it is
// stuck once it runs for more than the timeout.
TEST(HangDetector, QueuedWorkLongerThanTheTimeoutIsNoHang) {
  const HangReport queued = classify_snapshot(
      snapshot({queued_in_collective(0, 6, 12 * kSec), queued_in_collective(1, 6, 12 * kSec)}),
      5.0);
  EXPECT_FALSE(queued.hung) << queued.summary;
  EXPECT_EQ(ranks_in(queued, RankState::kOk), (std::vector<int>{0, 1}));
  EXPECT_NEAR(queued.ranks[0].pending_s, 12.0, 1e-9);
  EXPECT_EQ(queued.ranks[0].running_s, -1);

  RankSample running = in_collective(0, 6, 4 * kSec);
  running.oldest_inflight = allreduce(6, 4 * kSec, 12 * kSec);  // launched 16 s ago
  const HangReport young = classify_snapshot(snapshot({running, behind(1, 6)}), 5.0);
  EXPECT_FALSE(young.hung) << young.summary;

  running.oldest_inflight = allreduce(6, k5_2s, 12 * kSec);
  const HangReport stuck = classify_snapshot(snapshot({running, behind(1, 6)}), 5.0);
  ASSERT_TRUE(stuck.hung);
  EXPECT_EQ(stuck.summary,
            "rank 0 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; rank 1 missing (last "
            "completed #5 on that comm)");
  EXPECT_NEAR(stuck.ranks[0].pending_s, 17.2, 1e-9);
}

// Nothing started for kNotStartedFactor timeouts since launch: a GPU that
// stopped in work we do not see, with no peer waiting to show it.
TEST(HangDetector, NothingStartedForThreeTimeoutsIsStuckBeforeTheOperation) {
  const uint64_t just_below = static_cast<uint64_t>(kNotStartedFactor * 5.0 * 1e9) - kSec / 10;
  EXPECT_FALSE(classify_snapshot(snapshot({queued_in_collective(0, 6, just_below)}), 5.0).hung);

  const HangReport r =
      classify_snapshot(snapshot({queued_in_collective(0, 6, 15 * kSec + kSec / 2)}), 5.0);
  ASSERT_TRUE(r.hung);
  EXPECT_EQ(ranks_in(r, RankState::kStuck), (std::vector<int>{0}));
  EXPECT_TRUE(r.ranks[0].not_started);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_TRUE(r.groups[0].not_started);
  EXPECT_NEAR(r.groups[0].waiting_s, 15.5, 1e-9);
  EXPECT_EQ(r.summary,
            "rank 0 stuck before AllReduce #6 on comm 1a2b3c4d5e6f7a8b (nothing started on the GPU "
            "for 15.5 s)");
  EXPECT_EQ(hang_sentence(r, false),
            "rank 0 stuck before AllReduce #6 on comm 1a2b3c4d5e6f7a8b (nothing started on the "
            "GPU)");
}

// A stopped GPU on one rank of many: its peers start the collective and wait
// in it; the rank that issued it and never started it is the missing one.
TEST(HangDetector, RankThatIssuedTheCollectiveButNeverStartedItIsMissing) {
  RankSample gemm_first = healthy(2);  // its GEMM before #6 never finished
  gemm_first.inflight_count = 2;
  gemm_first.oldest_inflight.name = static_cast<uint16_t>(proto::OpName::kGemmEx);
  gemm_first.oldest_inflight.kind = static_cast<uint8_t>(proto::OpKind::kGemm);
  gemm_first.oldest_inflight.launch_ns = kNow - 6 * kSec;
  gemm_first.comms.push_back(proto::CommSlot{kComm, 4, 2, 6, 5, 0, 0, {}});
  const Snapshot snap = snapshot({in_collective(0, 6, k5_2s), queued_in_collective(1, 6, 6 * kSec),
                                  gemm_first, in_collective(3, 6, k5_2s)});
  const HangReport r = classify_snapshot(snap, 5.0);
  ASSERT_TRUE(r.hung);
  EXPECT_EQ(ranks_in(r, RankState::kStuck), (std::vector<int>{0, 3}));
  EXPECT_EQ(ranks_in(r, RankState::kMissing), (std::vector<int>{1, 2}));
  EXPECT_EQ(r.ranks[1].reason, MissingReason::kNotStarted);
  EXPECT_EQ(r.ranks[2].reason, MissingReason::kNotStarted);
  EXPECT_EQ(r.ranks[1].issued_seq, 6u);
  EXPECT_EQ(r.ranks[1].last_completed_seq, 5u);
  EXPECT_EQ(r.groups[0].missing, (std::vector<int>{1, 2}));
  EXPECT_EQ(r.summary,
            "ranks 0,3 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; ranks 1,2 missing "
            "(issued #6, not started on the GPU)");
}

// A healthy job with more queued work per step than the timeout, step after
// step: queued 3.3 s, runs 1 ms, completes; never a hang event.
TEST(HangDetector, RepeatedQueuedStepsNeverRaiseAHang) {
  HangDetector d(2.0);
  for (uint64_t ms = 0; ms < 3400; ms += 100) {
    std::vector<RankSample> ranks;
    for (int rank = 0; rank < 2; ++rank) {
      ranks.push_back(ms < 3300 ? queued_in_collective(rank, 6, ms * 1000000ull)
                                : in_collective(rank, 6, (ms - 3300 + 1) * 1000000ull));
    }
    EXPECT_EQ(d.update(snapshot(ranks)), HangEvent::kNone) << ms;
  }
  EXPECT_FALSE(d.report().hung);
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
  // Rank 1 arrives (its wait younger than the timeout): stuck with rank 0, a new sentence.
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
  EXPECT_FALSE(d.report().frozen_since_unix_s.has_value());
  Snapshot later = snapshot({dead, dead1});
  later.now_unix_s += 4;
  EXPECT_EQ(d.update(later), HangEvent::kNone);
  EXPECT_TRUE(d.report().hung);
  // Kept for the post-mortem, and said to be frozen: its 5.2 s no longer grow.
  EXPECT_EQ(d.report().summary,
            "rank 0 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; rank 1 missing "
            "(last completed #5 on that comm); no rank is stuck any more, durations as of then");
  EXPECT_EQ(d.report().frozen_since_unix_s, later.now_unix_s);
  later.now_unix_s += 10;
  EXPECT_EQ(d.update(later), HangEvent::kNone);
  EXPECT_EQ(d.report().frozen_since_unix_s, later.now_unix_s - 10);  // the first instant
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
