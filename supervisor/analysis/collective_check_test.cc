#include "supervisor/analysis/collective_check.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace xpu_timer::supervisor {
namespace {

using proto::DType;
using proto::OpName;
using recorder::RecordData;

constexpr uint64_t kComm = 0x1a2b3c4d5e6f7a8bull;
constexpr uint64_t kSec = 1000ull * 1000 * 1000;

RecordData coll(OpName name, uint64_t seq, uint64_t count, uint32_t nranks = 4,
                uint64_t comm = kComm) {
  RecordData d;
  d.name = static_cast<uint16_t>(name);
  d.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  d.dtype = static_cast<uint8_t>(DType::kBF16);
  d.red_op = name == OpName::kAllReduce || name == OpName::kReduce ? 1 : 0;
  d.peer = name == OpName::kBroadcast || name == OpName::kReduce ? 0 : -1;
  d.comm_hash = comm;
  d.seq = seq;
  d.count = count;
  d.nranks = nranks;
  return d;
}

TEST(CollectiveCheck, AgreeingRanksGiveNothingAndAreForgotten) {
  CollectiveChecker c;
  for (uint64_t seq = 1; seq <= 100; ++seq) {
    for (int r = 0; r < 4; ++r) c.add(r, coll(OpName::kAllReduce, seq, 1024));
  }
  EXPECT_TRUE(c.check(kSec, 1.0).empty());
  EXPECT_EQ(c.compared(), 100u);
  EXPECT_EQ(c.pending(), 0u);
}

TEST(CollectiveCheck, EachKindIsNamedWithTheOddRank) {
  struct Case {
    const char* kind;
    RecordData odd;
  };
  RecordData dtype = coll(OpName::kBroadcast, 7, 1024);
  dtype.dtype = static_cast<uint8_t>(DType::kF32);
  RecordData root = coll(OpName::kBroadcast, 7, 1024);
  root.peer = 1;
  RecordData red = coll(OpName::kBroadcast, 7, 1024);
  red.red_op = 3;
  const Case cases[] = {{"op", coll(OpName::kAllGather, 7, 1024)},
                        {"count", coll(OpName::kBroadcast, 7, 2048)},
                        {"dtype", dtype},
                        {"root", root},
                        {"red_op", red}};
  for (const Case& k : cases) {
    CollectiveChecker c;
    for (int r = 0; r < 4; ++r) c.add(r, r == 2 ? k.odd : coll(OpName::kBroadcast, 7, 1024));
    const std::vector<Mismatch> m = c.check(kSec, 1.0);
    ASSERT_EQ(m.size(), 1u) << k.kind;
    EXPECT_EQ(m[0].kind, k.kind);
    EXPECT_EQ(m[0].seq, 7u);
    EXPECT_EQ(m[0].comm_hash, kComm);
    EXPECT_EQ(m[0].odd_ranks, std::vector<int>{2});
    EXPECT_EQ(m[0].ranks, (std::vector<int>{0, 1, 2, 3}));
    ASSERT_EQ(m[0].groups.size(), 2u);
    EXPECT_EQ(m[0].groups[0].second, (std::vector<int>{0, 1, 3}));
    EXPECT_NE(m[0].summary.find("rank 2"), std::string::npos) << m[0].summary;
    EXPECT_NE(m[0].summary.find("#7"), std::string::npos) << m[0].summary;
  }
}

TEST(CollectiveCheck, ReportedOnceAndAsSoonAsTwoRanksDisagree) {
  CollectiveChecker c;
  c.add(0, coll(OpName::kAllReduce, 3, 1024, 2));
  EXPECT_TRUE(c.check(kSec, 1.0).empty());  // one rank: nothing to compare yet
  c.add(1, coll(OpName::kAllReduce, 3, 2048, 2));
  const std::vector<Mismatch> m = c.check(2 * kSec, 2.0);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].kind, "count");
  EXPECT_TRUE(m[0].odd_ranks.empty());  // two ranks: either may be wrong
  EXPECT_NE(m[0].summary.find("rank 0 issued AllReduce bf16 x 1024 sum"), std::string::npos)
      << m[0].summary;
  EXPECT_NE(m[0].summary.find("rank 1 AllReduce bf16 x 2048 sum"), std::string::npos)
      << m[0].summary;
  // The same records read again (a torn position retried) are no new mismatch.
  c.add(1, coll(OpName::kAllReduce, 3, 2048, 2));
  EXPECT_TRUE(c.check(3 * kSec, 3.0).empty());
}

// The rings are read (and records added) before the first check(), on a
// clock past the retention (CLOCK_MONOTONIC: the machine's uptime): the
// collective waits its settle time from then, not from 0 (it was forgotten
// as too old at once, and the late members made a new entry that agreed).
TEST(CollectiveCheck, RecordsAddedBeforeTheFirstCheckWaitForTheirLateMembers) {
  constexpr uint64_t kUptime = 1000 * kSec;
  static_assert(kUptime > CollectiveChecker::kRetentionNs);
  CollectiveChecker c;
  for (int r : {1, 2, 4, 5, 6, 7}) c.add(r, coll(OpName::kAllReduce, 1, r == 6 ? 2048 : 1024, 8));
  EXPECT_TRUE(c.check(kUptime, 1000.0).empty());  // ranks 0 and 3 not read yet
  EXPECT_EQ(c.pending(), 1u);
  for (int r : {0, 3}) c.add(r, coll(OpName::kAllReduce, 1, 1024, 8));
  const std::vector<Mismatch> m = c.check(kUptime + kSec / 100, 1000.01);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].seq, 1u);
  EXPECT_EQ(m[0].kind, "count");
  EXPECT_EQ(m[0].odd_ranks, std::vector<int>{6});
  EXPECT_EQ(m[0].ranks.size(), 8u);
  EXPECT_EQ(c.pending(), 0u);
}

// Rings are read at different moments: a member whose record is not read
// yet must not make the others the odd ones. Ranks 2 and 3 are odd, rank 1
// is late: seen alone, ranks 0, 2, 3 would blame rank 0.
TEST(CollectiveCheck, ADisagreementWaitsForTheLateMembersThenForTheSettleTime) {
  CollectiveChecker c;
  c.add(0, coll(OpName::kAllReduce, 5, 1024));
  c.add(2, coll(OpName::kAllReduce, 5, 2048));
  c.add(3, coll(OpName::kAllReduce, 5, 2048));
  EXPECT_TRUE(c.check(10 * kSec, 10.0).empty());
  EXPECT_TRUE(c.check(10 * kSec + CollectiveChecker::kSettleNs - 1, 11.0).empty());
  c.add(1, coll(OpName::kAllReduce, 5, 1024));
  std::vector<Mismatch> m = c.check(10 * kSec + CollectiveChecker::kSettleNs - 1, 11.0);
  ASSERT_EQ(m.size(), 1u);  // every member is in: no need to wait longer
  EXPECT_EQ(m[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(m[0].odd_ranks.empty()) << "two against two: either side may be wrong";

  // A member that never reports (it hung before the collective): the others
  // are compared once the settle time has passed.
  CollectiveChecker d;
  d.add(0, coll(OpName::kAllReduce, 6, 1024));
  d.add(1, coll(OpName::kAllReduce, 6, 1024));
  d.add(3, coll(OpName::kAllReduce, 6, 4096));
  EXPECT_TRUE(d.check(20 * kSec, 20.0).empty());
  m = d.check(20 * kSec + CollectiveChecker::kSettleNs, 21.0);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].ranks, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(m[0].odd_ranks, std::vector<int>{3});
  EXPECT_TRUE(d.check(30 * kSec, 30.0).empty());  // once
}

TEST(CollectiveCheck, TwoCommunicatorsOverTheSameRanksAreNeverConfused) {
  CollectiveChecker c;
  constexpr uint64_t kOther = 0x99ull;
  for (uint64_t seq = 1; seq <= 10; ++seq) {
    for (int r = 0; r < 2; ++r) {
      c.add(r, coll(OpName::kAllReduce, seq, 1024, 2, kComm));
      c.add(r, coll(OpName::kAllGather, seq, 64, 2, kOther));
    }
  }
  EXPECT_TRUE(c.check(kSec, 1.0).empty());
  EXPECT_EQ(c.compared(), 20u);
}

TEST(CollectiveCheck, DivergedSequencesStopTheCheckInsteadOfFalseMismatches) {
  CollectiveChecker c;
  // Rank 0 sends once more than rank 1 on the communicator: from seq 2 on,
  // the same number names different collectives.
  RecordData send = coll(OpName::kSend, 2, 16, 2);
  send.peer = 1;
  c.add(0, coll(OpName::kAllReduce, 1, 1024, 2));
  c.add(1, coll(OpName::kAllReduce, 1, 1024, 2));
  c.add(0, send);
  c.add(1, coll(OpName::kAllReduce, 2, 1024, 2));
  c.add(0, coll(OpName::kAllReduce, 3, 1024, 2));
  c.add(1, coll(OpName::kAllGather, 3, 8, 2));
  EXPECT_TRUE(c.check(kSec, 1.0).empty());
  EXPECT_EQ(c.unaligned_comms().count(kComm), 1u);
}

TEST(CollectiveCheck, GroupsAndOtherKindsAreNotCompared) {
  CollectiveChecker c;
  RecordData g0 = coll(OpName::kGroup, 5, 0, 2);
  g0.flags = recorder::kRecGroup;
  g0.group_size = 2;
  RecordData g1 = g0;
  g1.count = 99;  // a group's members are not recorded one by one
  c.add(0, g0);
  c.add(1, g1);
  RecordData gemm;
  gemm.kind = static_cast<uint8_t>(proto::OpKind::kGemm);
  gemm.name = static_cast<uint16_t>(OpName::kGemmEx);
  c.add(0, gemm);
  RecordData local = coll(OpName::kAllReduce, 6, 1, 2, 0);  // no shared identity
  c.add(0, local);
  EXPECT_TRUE(c.check(kSec, 1.0).empty());
  EXPECT_TRUE(c.unaligned_comms().empty());
}

TEST(CollectiveCheck, ACollectiveAMemberNeverReportsIsForgottenAfterTheRetention) {
  CollectiveChecker c;
  c.check(kSec, 1.0);
  c.add(0, coll(OpName::kAllReduce, 1, 1024, 2));
  c.check(kSec, 1.0);
  EXPECT_EQ(c.pending(), 1u);
  c.check(kSec + CollectiveChecker::kRetentionNs + 1, 200.0);
  EXPECT_EQ(c.pending(), 0u);
}

Snapshot snapshot_naming(uint64_t comm, const char* name, uint32_t flags = 0) {
  Snapshot snap;
  RankSample s;
  proto::CommSlot slot{comm, 4, 0, 1, 1, flags, 0, {}};
  std::snprintf(slot.name, sizeof(slot.name), "%s", name);
  s.comms.push_back(slot);
  snap.ranks.push_back(s);
  return snap;
}

std::vector<Mismatch> op_mismatch(CollectiveChecker& c) {
  for (int r = 0; r < 4; ++r) {
    c.add(r, coll(r == 3 ? OpName::kAllGather : OpName::kAllReduce, 12, 1024));
  }
  return c.check(kSec, 1.0);
}

TEST(CollectiveCheck, SentenceAndJsonWithoutANameAreUnchanged) {
  CollectiveChecker c;
  const std::vector<Mismatch> m = op_mismatch(c);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].summary,
            "ranks 0,1,2 issued AllReduce bf16 x 1024 sum and rank 3 AllGather bf16 x 1024 as "
            "collective #12 on comm 1a2b3c4d5e6f7a8b (4 ranks): op mismatch, the odd one out: "
            "rank 3");
  EXPECT_TRUE(mismatch_json(m[0])["comm_name"].is_null());
}

TEST(CollectiveCheck, MismatchNamesTheCommunicatorItsPagesName) {
  CollectiveChecker c;
  c.note_comm_names(snapshot_naming(kComm, "tp_group"));
  c.note_comm_names(snapshot_naming(kComm ^ 1, "other"));
  const std::vector<Mismatch> m = op_mismatch(c);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].comm_name, "tp_group");
  EXPECT_EQ(m[0].summary,
            "ranks 0,1,2 issued AllReduce bf16 x 1024 sum and rank 3 AllGather bf16 x 1024 as "
            "collective #12 on comm 1a2b3c4d5e6f7a8b (tp_group, 4 ranks): op mismatch, the odd "
            "one out: rank 3");
  EXPECT_EQ(mismatch_json(m[0])["comm_name"], "tp_group");
  Mismatch unsized = m[0];
  unsized.nranks = 0;
  EXPECT_NE(mismatch_sentence(unsized).find("on comm 1a2b3c4d5e6f7a8b (tp_group): op"),
            std::string::npos)
      << mismatch_sentence(unsized);
}

TEST(CollectiveCheck, NamesOfUnnamedOrRankLocalCommunicatorsAreIgnored) {
  CollectiveChecker c;
  c.note_comm_names(snapshot_naming(kComm, ""));
  c.note_comm_names(snapshot_naming(kComm, "local", proto::kCommFlagUnknownIdentity));
  EXPECT_EQ(c.comm_name(kComm), "");
  const std::vector<Mismatch> m = op_mismatch(c);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].comm_name, "");
}

}  // namespace
}  // namespace xpu_timer::supervisor
