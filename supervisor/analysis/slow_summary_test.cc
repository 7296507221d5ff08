#include "supervisor/analysis/slow_summary.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace xpu_timer::supervisor
