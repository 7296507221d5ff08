#include "supervisor/analysis/hang_detector.h"

#include <gtest/gtest.h>

#include "common/op_names.h"

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

// POST /config: a lower timeout declares at the next update a hang already
// past it; a raised one leaves a declared hang standing (judged by the
// timeout it was declared under until its ranks progress, never "frozen");
// the stall time follows at once.
TEST(HangDetector, NewThresholdsJudgeFromTheNextUpdate) {
  HangDetector d(300.0, 2.0);
  const Snapshot stuck = snapshot({in_collective(0, 6, k5_2s), behind(1, 6)});
  EXPECT_EQ(d.update(stuck), HangEvent::kNone);
  d.set_thresholds(5.0, 4.0);
  EXPECT_DOUBLE_EQ(d.timeout_s(), 5.0);
  EXPECT_DOUBLE_EQ(d.stall_s(), 20.0);
  EXPECT_DOUBLE_EQ(d.report().timeout_s, 5.0);
  EXPECT_EQ(d.update(stuck), HangEvent::kDetected);
  d.set_thresholds(60.0, 4.0);
  EXPECT_EQ(d.update(snapshot({in_collective(0, 6, 6 * kSec), behind(1, 6)})), HangEvent::kNone);
  EXPECT_TRUE(d.report().hung);
  EXPECT_FALSE(d.report().frozen_since_unix_s.has_value()) << d.report().summary;
  EXPECT_DOUBLE_EQ(d.report().timeout_s, 5.0);
  // Cleared by progress; from then on the new timeout judges.
  RankSample done0 = healthy(0);
  done0.completed_total = 51;
  EXPECT_EQ(d.update(snapshot({done0, healthy(1)})), HangEvent::kCleared);
  EXPECT_EQ(d.update(snapshot({in_collective(0, 7, 6 * kSec), behind(1, 7)})), HangEvent::kNone);
  EXPECT_FALSE(d.report().hung);
  EXPECT_DOUBLE_EQ(d.report().timeout_s, 60.0);
}

// Stalls (docs/architecture.md "Hang detection"): a 1 s timeout and factor 2,
// so a stall after 2 s of nothing.

// `n` idle ranks read at `t_s` seconds after kNow, their heartbeats fresh,
// `issued` operations issued and completed each.
Snapshot idle_at(int n, double t_s, uint64_t issued = 50) {
  const auto dt = static_cast<uint64_t>(t_s * 1e9);
  std::vector<RankSample> ranks;
  for (int r = 0; r < n; ++r) {
    RankSample s = healthy(r);
    s.node = 0;
    s.heartbeat_ns += dt;
    s.issued_total = s.completed_total = issued;
    ranks.push_back(s);
  }
  Snapshot snap = snapshot(std::move(ranks));
  snap.now_ns += dt;
  snap.now_unix_s += t_s;
  return snap;
}

TEST(HangDetectorStall, DeclaredAfterFactorTimesTimeoutNotBefore) {
  HangDetector d(1.0, 2.0);
  EXPECT_DOUBLE_EQ(d.stall_s(), 2.0);
  for (double t : {0.0, 0.5, 1.0, 1.9}) {
    EXPECT_EQ(d.update(idle_at(4, t)), HangEvent::kNone) << t;
    EXPECT_FALSE(d.report().stalled) << t;
    EXPECT_EQ(d.report().summary, "no hang");
  }
  EXPECT_EQ(d.update(idle_at(4, 2.0)), HangEvent::kDetected);
  const HangReport& r = d.report();
  EXPECT_TRUE(r.stalled);
  EXPECT_FALSE(r.hung);
  EXPECT_FALSE(r.detected_at_unix_s.has_value());    // the hang's
  EXPECT_EQ(r.stalled_since_unix_s, 1700000000.25);  // the first read of the still ranks
  EXPECT_EQ(ranks_in(r, RankState::kStalled), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(r.summary,
            "ranks 0-3 stalled: nothing in flight and nothing issued or completed for 2.0 s");
  EXPECT_STREQ(rank_state_name(RankState::kStalled), "stalled");
  // Later: the same stall, its duration grown, no new event.
  EXPECT_EQ(d.update(idle_at(4, 3.5)), HangEvent::kNone);
  EXPECT_TRUE(d.report().stalled);
  EXPECT_DOUBLE_EQ(d.report().stalled_s, 3.5);
  EXPECT_EQ(d.report().stalled_since_unix_s, 1700000000.25);
}

TEST(HangDetectorStall, ClearedByOneCompletionAndJudgedAfreshAfterIt) {
  HangDetector d(1.0, 2.0);
  d.update(idle_at(4, 0));
  ASSERT_EQ(d.update(idle_at(4, 2.5)), HangEvent::kDetected);
  Snapshot one_done = idle_at(4, 3.0);
  one_done.ranks[2].completed_total += 1;  // a completion nobody saw in flight
  EXPECT_EQ(d.update(one_done), HangEvent::kCleared);
  EXPECT_FALSE(d.report().stalled);
  EXPECT_FALSE(d.report().stalled_since_unix_s.has_value());
  EXPECT_EQ(d.report().summary, "no hang");
  EXPECT_EQ(ranks_in(d.report(), RankState::kOk), (std::vector<int>{0, 1, 2, 3}));
  // Still again from 3.0 s: a new stall only 2 s later.
  one_done = idle_at(4, 4.9);
  one_done.ranks[2].completed_total += 1;
  EXPECT_EQ(d.update(one_done), HangEvent::kNone);
  one_done = idle_at(4, 5.0);
  one_done.ranks[2].completed_total += 1;
  EXPECT_EQ(d.update(one_done), HangEvent::kDetected);
  EXPECT_EQ(d.report().stalled_since_unix_s, 1700000000.25 + 3.0);
}

TEST(HangDetectorStall, AnIssuedOperationClearsItAndKeepsItAway) {
  HangDetector d(1.0, 2.0);
  d.update(idle_at(2, 0));
  ASSERT_EQ(d.update(idle_at(2, 2.0)), HangEvent::kDetected);
  Snapshot busy = idle_at(2, 2.5);
  busy.ranks[0].issued_total += 1;
  busy.ranks[0].inflight_count = 1;
  busy.ranks[0].oldest_inflight = allreduce(7, kSec / 10);
  busy.ranks[0].oldest_inflight.started_ns += 2500 * kSec / 1000;
  busy.ranks[0].oldest_inflight.launch_ns += 2500 * kSec / 1000;
  EXPECT_EQ(d.update(busy), HangEvent::kCleared);
  // In flight (below the timeout) for longer than the stall time: no stall.
  for (double t : {3.0, 5.0}) {
    busy.now_ns = kNow + static_cast<uint64_t>(t * 1e9);
    busy.now_unix_s = 1700000000.25 + t;
    busy.ranks[0].oldest_inflight.started_ns = busy.now_ns - kSec / 2;
    EXPECT_EQ(d.update(busy), HangEvent::kNone);
    EXPECT_FALSE(d.report().stalled);
    EXPECT_FALSE(d.report().hung);
  }
}

TEST(HangDetectorStall, AHangTakesPrecedence) {
  HangDetector d(1.0, 2.0);
  d.update(idle_at(2, 0));
  ASSERT_EQ(d.update(idle_at(2, 2.0)), HangEvent::kDetected);
  ASSERT_TRUE(d.report().stalled);
  // Next read: rank 0 waits in an all-reduce past the timeout, rank 1 never
  // issued it: a hang, and no stall.
  Snapshot hung = snapshot({in_collective(0, 6, k5_2s), behind(1, 6)});
  hung.now_unix_s += 10;
  EXPECT_EQ(d.update(hung), HangEvent::kDetected);
  EXPECT_TRUE(d.report().hung);
  EXPECT_FALSE(d.report().stalled);
  EXPECT_EQ(d.report().summary.rfind("rank 0 stuck in AllReduce #6", 0), 0u) << d.report().summary;
  // Its stuck rank dies: the hang is kept (frozen) and idle survivors never
  // make it a stall.
  Snapshot after = idle_at(2, 30);
  after.ranks[0].alive = false;
  EXPECT_EQ(d.update(after), HangEvent::kNone);
  after = idle_at(2, 60);
  after.ranks[0].alive = false;
  EXPECT_EQ(d.update(after), HangEvent::kNone);
  EXPECT_TRUE(d.report().hung);
  EXPECT_FALSE(d.report().stalled);
}

TEST(HangDetectorStall, OffWithFactorZero) {
  HangDetector d(1.0, 0.0);
  for (double t : {0.0, 5.0, 100.0}) {
    EXPECT_EQ(d.update(idle_at(4, t)), HangEvent::kNone);
    EXPECT_FALSE(d.report().stalled);
  }
  EXPECT_FALSE(d.wants_fresh_news(0));
  HangDetector no_factor(1.0);  // the detector alone judges no stall
  no_factor.update(idle_at(1, 0));
  EXPECT_EQ(no_factor.update(idle_at(1, 100)), HangEvent::kNone);
}

TEST(HangDetectorStall, StaleHeartbeatRankIsUnresponsiveAndTheJobStillStalled) {
  // Rank 1 stopped (SIGSTOP) while idle: its page still reads, its heartbeat
  // ages. The job is stalled all the same; rank 1 is named unresponsive.
  HangDetector d(1.0, 2.0);
  d.update(idle_at(4, 0));
  ASSERT_EQ(d.update(idle_at(4, 2.0)), HangEvent::kDetected);
  Snapshot stopped = idle_at(4, 14.0);
  stopped.ranks[1].heartbeat_ns -= 12 * kSec;  // last beat at 2 s: 12 s ago
  EXPECT_EQ(d.update(stopped), HangEvent::kChanged);
  const HangReport& r = d.report();
  EXPECT_TRUE(r.stalled);
  EXPECT_EQ(ranks_in(r, RankState::kStalled), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(ranks_in(r, RankState::kUnresponsive), (std::vector<int>{1}));
  EXPECT_EQ(r.summary,
            "ranks 0-3 stalled: nothing in flight and nothing issued or completed for 14.0 s; "
            "rank 1 unresponsive (no heartbeat for 12.0 s)");
  // Every rank stopped from the start: stalled, all unresponsive.
  HangDetector all(1.0, 2.0);
  Snapshot s0 = idle_at(2, 0);
  all.update(s0);
  for (RankSample& s : s0.ranks) s.heartbeat_ns = kNow - 20 * kSec;
  s0.now_ns += 3 * kSec;
  s0.now_unix_s += 3;
  EXPECT_EQ(all.update(s0), HangEvent::kDetected);
  EXPECT_EQ(all.report().summary,
            "ranks 0-1 stalled: nothing in flight and nothing issued or completed for 3.0 s; "
            "ranks 0-1 unresponsive (no heartbeat for 23.0 s)");
}

TEST(HangDetectorStall, NeedsEveryRankRegisteredAliveAndTimed) {
  const auto judged_stalled = [](Snapshot later) {
    HangDetector d(1.0, 2.0);
    Snapshot first = later;
    first.now_ns -= 5 * kSec;
    d.update(first);
    d.update(later);
    return d.report().stalled;
  };
  EXPECT_TRUE(judged_stalled(idle_at(3, 0)));
  Snapshot never = idle_at(3, 0);
  never.ranks[2] = RankSample{};
  never.ranks[2].rank = 2;  // expected, never registered
  EXPECT_FALSE(judged_stalled(never));
  Snapshot exited = idle_at(3, 0);
  exited.ranks[1].alive = false;
  EXPECT_FALSE(judged_stalled(exited));
  Snapshot untimed = idle_at(3, 0);
  untimed.ranks[0].page_flags = proto::kPageFlagTimingDisabled;
  EXPECT_FALSE(judged_stalled(untimed));

  // A stall ends when a rank exits.
  HangDetector d(1.0, 2.0);
  d.update(idle_at(3, 0));
  ASSERT_EQ(d.update(idle_at(3, 2)), HangEvent::kDetected);
  exited = idle_at(3, 3);
  exited.ranks[1].alive = false;
  EXPECT_EQ(d.update(exited), HangEvent::kCleared);
}

TEST(HangDetectorStall, DeclaredOnlyOnNewsAndNotEndedByAPageNotRead) {
  HangDetector d(1.0, 2.0);
  d.update(idle_at(2, 0));
  Snapshot unread = idle_at(2, 3);
  unread.ranks[1].page_ok = false;  // busy under its seqlock this time
  EXPECT_EQ(d.update(unread), HangEvent::kNone);
  EXPECT_FALSE(d.report().stalled);
  EXPECT_EQ(d.update(idle_at(2, 3.5)), HangEvent::kDetected);
  unread = idle_at(2, 4);
  unread.ranks[1].page_ok = false;
  EXPECT_EQ(d.update(unread), HangEvent::kNone);
  EXPECT_TRUE(d.report().stalled);
}

TEST(HangDetectorStall, AnotherNodesRanksAreStillOnlyAsLongAsThatNodeSawThem) {
  // Rank 1 is another node's: its samples carry that node's read time
  // (read_ns, its own clock). A document that is not renewed (the same
  // read time for 10 s here) never makes its ranks look still for longer.
  HangDetector d(1.0, 2.0);
  const uint64_t remote_t0 = 777 * kSec;
  for (double t : {0.0, 3.0, 10.0}) {
    Snapshot snap = idle_at(2, t);
    snap.ranks[1].node = 1;
    snap.ranks[1].read_ns = remote_t0;
    EXPECT_EQ(d.update(snap), HangEvent::kNone) << t;
    EXPECT_FALSE(d.report().stalled) << t;
  }
  // Fresh news: that node read its page again 2 s after the first read.
  Snapshot snap = idle_at(2, 11.0);
  snap.ranks[1].node = 1;
  snap.ranks[1].read_ns = remote_t0 + 2 * kSec;
  EXPECT_EQ(d.update(snap), HangEvent::kDetected);
  EXPECT_DOUBLE_EQ(d.report().stalled_s, 2.0);  // the shortest stillness: rank 1's
  // Older news than held (a document read late) changes nothing.
  snap = idle_at(2, 12.0);
  snap.ranks[1].node = 1;
  snap.ranks[1].read_ns = remote_t0 + kSec;
  snap.ranks[1].completed_total += 5;
  EXPECT_EQ(d.update(snap), HangEvent::kNone);
  EXPECT_TRUE(d.report().stalled);
}

TEST(HangDetectorStall, NodeWantsFreshNewsAfterHalfTheStallTime) {
  HangDetector d(1.0, 2.0);
  EXPECT_FALSE(d.wants_fresh_news(0));
  d.update(idle_at(2, 0));
  d.update(idle_at(2, 0.9));
  EXPECT_FALSE(d.wants_fresh_news(0));
  d.update(idle_at(2, 1.0));
  EXPECT_TRUE(d.wants_fresh_news(0));
  EXPECT_FALSE(d.wants_fresh_news(1));  // no rank of node 1 seen
  Snapshot moved = idle_at(2, 1.5);
  moved.ranks[0].completed_total += 1;
  d.update(moved);
  EXPECT_FALSE(d.wants_fresh_news(0));
  // A hang wants it too, stall or not.
  HangDetector h(5.0);
  h.update(snapshot({in_collective(0, 6, k5_2s), behind(1, 6)}));
  EXPECT_TRUE(h.wants_fresh_news(0));
}

TEST(HangDetectorStall, LargeJobsAreFolded) {
  HangDetector d(1.0, 2.0);
  d.update(idle_at(16, 0));
  ASSERT_EQ(d.update(idle_at(16, 2.0)), HangEvent::kDetected);
  EXPECT_EQ(hang_sentence(d.report(), false),
            "ranks 0-15 stalled: nothing in flight and nothing issued or completed");
}

// Where the culprits are (RankSample::where, from their stacks): named in the
// sentence once known, grouped by place, for culprits only.
const CodeFrame kHost{"stuck_in_host_code", "/w/tests/simgpu/sim_trainer.py", 184, true};
const CodeFrame kStep{"train_step", "/w/tests/simgpu/sim_trainer.py", 226, true};
const CodeFrame kLoad{"load_batch", "/w/train.py", 17, true};

TEST(HangWhere, TheMissingRanksPlaceCompletesTheSentenceOnceKnown) {
  std::vector<RankSample> ranks = {in_collective(0, 6, k5_2s), in_collective(1, 6, k5_2s),
                                   behind(2, 6), in_collective(3, 6, k5_2s)};
  HangDetector d(5.0);
  EXPECT_EQ(d.update(snapshot(ranks)), HangEvent::kDetected);
  const std::string before = d.report().summary;
  EXPECT_EQ(before,
            "ranks 0,1,3 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; rank 2 missing "
            "(last completed #5 on that comm)");
  // The stacks are in: rank 2's place, and a place on a stuck rank that the
  // verdict does not name (the stuck ranks are where their group says).
  ranks[2].where = {kHost, kStep};
  ranks[0].where = {kStep};
  EXPECT_EQ(d.update(snapshot(ranks)), HangEvent::kChanged);  // logged once more
  EXPECT_EQ(d.report().summary,
            before + ", in stuck_in_host_code (sim_trainer.py:184) <- train_step (sim_trainer.py:226)");
  EXPECT_EQ(d.report().ranks[2].where, (std::vector<CodeFrame>{kHost, kStep}));
  EXPECT_TRUE(d.report().ranks[0].where.empty());
  EXPECT_EQ(d.update(snapshot(ranks)), HangEvent::kNone);
}

TEST(HangWhere, RanksInDifferentPlacesAreNamedByPlaceAndBounded) {
  // Ranks 2-7 behind: 2,3,4 in one place, 5 in another, 6 unknown, 7 and
  // the unresponsive rank 8 in others.
  std::vector<RankSample> ranks = {in_collective(0, 6, k5_2s), in_collective(1, 6, k5_2s)};
  for (int r = 2; r <= 7; ++r) ranks.push_back(behind(r, 6));
  for (int r : {2, 3, 4}) ranks[r].where = {kHost, kStep};
  ranks[5].where = {kLoad};
  ranks[7].where = {kStep};
  RankSample gone = healthy(8);
  gone.heartbeat_ns = kNow - 20 * kSec;
  gone.where = {CodeFrame{"spin", "/opt/app/bin/app", 0, false}};
  ranks.push_back(gone);
  const HangReport r = classify_snapshot(snapshot(ranks), 5.0);
  EXPECT_EQ(r.summary,
            "ranks 0,1 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for 5.2 s; ranks 2,3,4,5,6,7 "
            "missing (last completed #5 on that comm), ranks 2,3,4 in stuck_in_host_code "
            "(sim_trainer.py:184) <- train_step (sim_trainer.py:226), rank 5 in load_batch "
            "(train.py:17), rank 7 in train_step (sim_trainer.py:226); rank 8 unresponsive (no "
            "heartbeat for 20.0 s), in spin (app)");
  // More places than a sentence names: the rest counted.
  ranks[6].where = {CodeFrame{"other", "/w/o.py", 1, true}};
  EXPECT_NE(classify_snapshot(snapshot(ranks), 5.0).summary.find(", rank 6 in other (o.py:1), 1 more elsewhere;"),
            std::string::npos);
}

TEST(HangWhere, AStallNamesWhereItsRanksStand) {
  HangDetector d(1.0, 2.0);
  d.update(idle_at(4, 0.0));
  Snapshot snap = idle_at(4, 2.0);
  for (RankSample& s : snap.ranks) s.where = {kHost, kStep};
  snap.ranks[3].where = {kLoad};
  EXPECT_EQ(d.update(snap), HangEvent::kDetected);
  EXPECT_EQ(d.report().summary,
            "ranks 0-3 stalled: nothing in flight and nothing issued or completed for 2.0 s, "
            "ranks 0-2 in stuck_in_host_code (sim_trainer.py:184) <- train_step "
            "(sim_trainer.py:226), rank 3 in load_batch (train.py:17)");
  for (RankSample& s : snap.ranks) s.where = {kLoad};
  EXPECT_EQ(d.update(snap), HangEvent::kChanged);
  EXPECT_EQ(d.report().summary,
            "ranks 0-3 stalled: nothing in flight and nothing issued or completed for 2.0 s, in "
            "load_batch (train.py:17)");
}

}  // namespace
}  // namespace xpu_timer::supervisor
