// What a verdict's dumps are keyed by, and which verdicts are told to the
// other nodes (hang_incident.h).
#include "supervisor/incidents/hang_incident.h"

#include <gtest/gtest.h>

namespace xpu_timer::supervisor {
namespace {

RankVerdict stuck_rank(int rank, uint64_t launch_ns, bool collective) {
  RankVerdict v;
  v.rank = rank;
  v.pid = 4000 + rank;
  v.state = RankState::kStuck;
  v.has_op = true;
  v.op.kind = static_cast<uint8_t>(collective ? proto::OpKind::kNccl : proto::OpKind::kGemm);
  v.op.comm_hash = collective ? 0x0cc3925f8ce4a8c2ull : 0;
  v.op.seq = collective ? 223 : 0;
  v.op.launch_ns = launch_ns;
  return v;
}

HangReport hang_of(std::vector<RankVerdict> ranks) {
  HangReport r;
  r.hung = true;
  r.ranks = std::move(ranks);
  return r;
}

// Another node's ranks come with times rebased onto this host's clock at
// every merge, so they move with the stamp's age: the same stuck collective
// keeps its key, and its verdict is not dumped again.
TEST(HangDumpKeys, AStuckCollectiveKeepsItsKeyWhenItsRebasedTimesMove) {
  const HangReport first =
      hang_of({stuck_rank(0, 1'000'000, true), stuck_rank(9, 2'000'000, true)});
  const HangReport later =
      hang_of({stuck_rank(0, 1'000'000, true), stuck_rank(9, 3'200'000'000, true)});
  EXPECT_EQ(hang_dump_keys(first), hang_dump_keys(later));
  ASSERT_EQ(hang_dump_keys(first).size(), 2u);
  EXPECT_EQ(hang_dump_keys(first)[1], "9/4009/0cc3925f8ce4a8c2#223");

  // The next collective is a new stuck operation.
  HangReport next = later;
  next.ranks[1].op.seq = 224;
  EXPECT_NE(hang_dump_keys(next), hang_dump_keys(later));
  // An operation that is no collective is told apart by its launch.
  const HangReport gemm = hang_of({stuck_rank(3, 5'000, false)});
  const HangReport other_gemm = hang_of({stuck_rank(3, 6'000, false)});
  EXPECT_NE(hang_dump_keys(gemm), hang_dump_keys(other_gemm));
}

TEST(HangDumpKeys, AStallIsKeyedByItsStart) {
  HangReport stall = hang_of({stuck_rank(0, 1, true)});
  stall.stalled = true;
  stall.stalled_since_unix_s = 1700000000.5;
  EXPECT_EQ(hang_dump_keys(stall), std::vector<std::string>{"stall@1700000000.500000"});
}

// Only a new hang is told to the other nodes: a changed verdict (a node that
// fell silent, a rank found missing) asked every node for dumps again.
TEST(HangIncidentAnnounced, OnlyANewHangIsToldToTheOtherNodes) {
  const HangReport hang = hang_of({stuck_rank(0, 1, true)});
  EXPECT_TRUE(HangIncident::announced(HangEvent::kDetected, hang));
  EXPECT_FALSE(HangIncident::announced(HangEvent::kChanged, hang));
  EXPECT_FALSE(HangIncident::announced(HangEvent::kCleared, hang));
  EXPECT_FALSE(HangIncident::announced(HangEvent::kNone, hang));
  HangReport stall = hang;
  stall.stalled = true;
  EXPECT_FALSE(HangIncident::announced(HangEvent::kDetected, stall));
}

}  // namespace
}  // namespace xpu_timer::supervisor
