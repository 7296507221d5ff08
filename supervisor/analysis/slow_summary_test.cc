#include "supervisor/analysis/slow_summary.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/op_names.h"

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kComm = 0x0123456789abcdefull;

Straggler straggler(int rank, int node) {
  Straggler s;
  s.rank = rank;
  s.node = node;
  s.cause = SlowCause::kLink;
  s.comm = kComm;
  s.comm_name = "dp";
  s.op = static_cast<uint16_t>(proto::OpName::kAllReduce);
  s.collectives = 300;
  s.late_share = 0.95;
  s.median_late_s = 0.012;
  s.wait_caused_s = 20;
  s.impact = 0.1;
  s.evidence.transfer_s = 0.015;
  s.evidence.peer_transfer_s = 0.005;
  s.summary = "rank " + std::to_string(rank) + " is slow";
  return s;
}

TEST(SlowSummary, RoundTripsThroughItsText) {
  NodeSlowSummary s;
  s.node = 1;
  s.unix_s = 1700000000.5;
  s.stragglers = {straggler(5, 1)};
  s.time_in_collective[kComm] = {{4, {300, 0.020}}, {5, {300, 0.008}}};
  NodeSlowSummary back;
  std::string error;
  ASSERT_TRUE(parse_slow_summary(slow_summary_text(s), 8, &back, &error)) << error;
  EXPECT_EQ(back.node, 1);
  EXPECT_DOUBLE_EQ(back.unix_s, s.unix_s);
  ASSERT_EQ(back.stragglers.size(), 1u);
  const Straggler& b = back.stragglers[0];
  EXPECT_EQ(b.rank, 5);
  EXPECT_EQ(b.cause, SlowCause::kLink);
  EXPECT_EQ(b.comm, kComm);
  EXPECT_EQ(b.comm_name, "dp");
  EXPECT_EQ(b.op, static_cast<uint16_t>(proto::OpName::kAllReduce));
  EXPECT_EQ(b.collectives, 300u);
  EXPECT_DOUBLE_EQ(b.evidence.transfer_s, 0.015);
  EXPECT_EQ(b.summary, "rank 5 is slow");
  EXPECT_EQ(back.time_in_collective, s.time_in_collective);
}

TEST(SlowSummary, RefusesWhatIsNotASummaryOfItsNode) {
  NodeSlowSummary s;
  s.node = 0;
  s.stragglers = {straggler(5, 1)};  // node 1's rank in node 0's summary
  NodeSlowSummary out;
  std::string error;
  EXPECT_FALSE(parse_slow_summary(slow_summary_text(s), 8, &out, &error));
  EXPECT_NE(error.find("another node"), std::string::npos) << error;
  s.stragglers = {straggler(9, 0)};
  s.stragglers[0].node = 0;
  EXPECT_FALSE(parse_slow_summary(slow_summary_text(s), 8, &out, &error));
  EXPECT_NE(error.find("rank 9 outside the world of 8"), std::string::npos) << error;
  EXPECT_FALSE(parse_slow_summary("{\"format\": 2}", 8, &out, &error));
  EXPECT_EQ(error, "format 2, this build reads 1");
  EXPECT_FALSE(parse_slow_summary("[]", 8, &out, &error));
  EXPECT_FALSE(parse_slow_summary(
      R"({"format":1,"node":0,"unix_s":1,"stragglers":[],"time_in_collective":{"zz":{}}})", 8, &out,
      &error));
  EXPECT_NE(error.find("not 16 hex digits"), std::string::npos) << error;
  EXPECT_FALSE(parse_slow_summary(
      R"({"format":1,"node":0,"unix_s":1,"stragglers":[],"time_in_collective":{"01":{"3x":[1,2]}}})",
      8, &out, &error));
}

TEST(SlowSummary, EveryNodeNamesTheSameStragglersConfirmedAcrossNodes) {
  SlowReport mine;  // node 0: nobody locally
  NodeSlowSummary n0;
  n0.node = 0;
  n0.time_in_collective[kComm] = {{0, {300, 0.020}}, {1, {300, 0.021}}};
  NodeSlowSummary n1;
  n1.node = 1;
  n1.stragglers = {straggler(3, 1)};
  n1.time_in_collective[kComm] = {{2, {300, 0.019}}, {3, {300, 0.008}}};
  SlowReport job = merge_slow_reports(mine, {n0, n1});
  ASSERT_EQ(job.stragglers.size(), 1u);
  EXPECT_EQ(job.stragglers[0].rank, 3);
  EXPECT_EQ(job.summary, "rank 3 is slow");
  // Node 1's last is not the job's when a rank of node 0 spends less time
  // in the collectives still (it arrives later).
  n0.time_in_collective[kComm][1] = {300, 0.002};
  job = merge_slow_reports(mine, {n0, n1});
  EXPECT_TRUE(job.stragglers.empty());
  EXPECT_EQ(job.summary, "no straggler");
}

// The leader's reduction (what it sends instead of every summary): each
// node, merging its own whole summary with the others' reduced ones, names
// the stragglers it would over every whole summary. Random jobs: 16 nodes of
// 4 ranks, 3 communicators, each node reporting its slowest rank of one
// communicator as a straggler now and then.
TEST(SlowSummary, TheReducedSummariesConfirmTheSameStragglersOnEveryNode) {
  uint64_t seed = 12345;
  const auto next = [&seed] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(seed >> 11) / 9007199254740992.0;
  };
  const uint64_t comms[] = {kComm, kComm + 1, kComm + 2};
  size_t confirmed = 0, reduced_entries = 0, whole_entries = 0;
  for (int job = 0; job < 200; ++job) {
    std::vector<NodeSlowSummary> nodes(16);
    for (int n = 0; n < 16; ++n) {
      nodes[n].node = n;
      for (uint64_t comm : comms) {
        for (int r = 4 * n; r < 4 * n + 4; ++r) {
          // Ties now and then: only a strictly quicker rank refutes.
          nodes[n].time_in_collective[comm][r] = {300, 0.001 * static_cast<int>(next() * 20)};
          ++whole_entries;
        }
      }
      if (next() < 0.3) {
        const uint64_t comm = comms[static_cast<int>(next() * 3)];
        Straggler s = straggler(4 * n + static_cast<int>(next() * 4), n);
        s.comm = comm;
        nodes[n].stragglers.push_back(s);
      }
    }
    const std::vector<NodeSlowSummary> reduced = reduce_slow_summaries(nodes);
    for (const NodeSlowSummary& r : reduced) {
      for (const auto& [comm, ranks] : r.time_in_collective) reduced_entries += ranks.size();
    }
    for (int me = 0; me < 16; ++me) {
      std::vector<NodeSlowSummary> seen = {nodes[me]};
      for (const NodeSlowSummary& r : reduced) {
        if (r.node != me) seen.push_back(r);
      }
      std::vector<int> whole, from_reduced;
      for (const Straggler& s : merge_slow_reports(SlowReport{}, nodes).stragglers) {
        whole.push_back(s.rank);
      }
      for (const Straggler& s : merge_slow_reports(SlowReport{}, seen).stragglers) {
        from_reduced.push_back(s.rank);
      }
      std::sort(whole.begin(), whole.end());
      std::sort(from_reduced.begin(), from_reduced.end());
      ASSERT_EQ(from_reduced, whole) << "job " << job << ", node " << me;
      confirmed += whole.size();
    }
  }
  EXPECT_GT(confirmed, 0u);  // the jobs had stragglers to confirm
  // What travels: a few entries per straggler, not every rank's.
  EXPECT_LT(reduced_entries * 10, whole_entries);
}

}  // namespace
}  // namespace xpu_timer::supervisor
