#include "timeline/timeline_diff.h"

#include <gtest/gtest.h>

#include "timeline/diff_trace.h"
#include "timeline/test_dumps.h"

namespace xpu_timer::timeline {
namespace {

using testing::JobSpec;
using testing::TempDir;

LoadedDumps load(const std::string& dir, int rank = -1) {
  LoadedDumps d;
  load_dumps({DumpSource{dir, rank}}, &d);
  EXPECT_TRUE(d.warnings.empty());
  return d;
}

// B: GEMMs 50 us slower, and the AllReduce shrunk from 64 MiB (200 us) to
// 32 MiB (120 us). Per rank, A spends 12 x 100 us in the GEMM (6 timed + 6
// sampled out) and 5.75 x 200 us in AllReduce (23 calls on 4 ranks).
class Diff : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_job(a_.path(), JobSpec{}, true);
    JobSpec b;
    b.gemm_ns = 150 * testing::kUs;
    b.allreduce_bytes = 32ull << 20;
    b.allreduce_ns = 120 * testing::kUs;
    testing::write_job(b_.path(), b, true);
  }
  TempDir a_, b_;
};

// Without steps the unit is a second of each rank's dump: from the first
// launch (step 1's GEMM, base + 1 ms) to the last time recorded (step 6's
// GEMM end, base + 6 ms + 10 us + gemm_ns): 5.11 ms in A, 5.16 ms in B.
TEST_F(Diff, WithoutStepsRowsAreSortedByTheChangeOfTimePerSecond) {
  const TimelineDiff d = diff_timelines(load(a_.path()), "A", load(b_.path()), "B");
  EXPECT_FALSE(d.per_step);
  EXPECT_STREQ(d.unit(), "s");
  EXPECT_DOUBLE_EQ(d.a_units, 0.00511);
  EXPECT_DOUBLE_EQ(d.b_units, 0.00516);
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(d.rows[0].shape, "bytes=67108864");
  EXPECT_EQ(d.rows[0].op, "AllReduce");
  EXPECT_DOUBLE_EQ(d.rows[0].a.calls_per_rank, 5.75);
  EXPECT_DOUBLE_EQ(d.rows[0].a.calls_per_unit, 5.75 / 0.00511);
  EXPECT_EQ(d.rows[0].a.timed, 20u);
  EXPECT_DOUBLE_EQ(d.rows[0].a.mean_ns(), 200000.0);
  EXPECT_EQ(d.rows[0].b.calls, 0u);
  EXPECT_DOUBLE_EQ(d.rows[0].a.total_ns(), 1150000.0);
  EXPECT_DOUBLE_EQ(d.rows[0].change_ns(), -5.75 / 0.00511 * 200000.0);
  EXPECT_EQ(d.rows[0].ratio(), 0);
  EXPECT_EQ(d.rows[1].shape, "bytes=33554432");
  EXPECT_DOUBLE_EQ(d.rows[1].change_ns(), 5.75 / 0.00516 * 120000.0);
  EXPECT_EQ(d.rows[2].op, "GemmEx");
  EXPECT_EQ(d.rows[2].dtype, "bf16");
  EXPECT_EQ(d.rows[2].shape, "m=4096 n=4096 k=1024 batch=1");
  EXPECT_DOUBLE_EQ(d.rows[2].a.calls_per_rank, 12.0);
  EXPECT_DOUBLE_EQ(d.rows[2].b.mean_ns(), 150000.0);
  EXPECT_DOUBLE_EQ(d.rows[2].ratio(), 1.5);
  EXPECT_DOUBLE_EQ(d.rows[2].change_ns(), 12 / 0.00516 * 150000.0 - 12 / 0.00511 * 100000.0);

  const std::string table = diff_table(d);
  const size_t first = table.find("bytes=67108864"), second = table.find("bytes=33554432"),
               third = table.find("m=4096 n=4096 k=1024 batch=1");
  ASSERT_NE(first, std::string::npos) << table;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_NE(table.find("(4 ranks, 0.00511 s per rank)"), std::string::npos) << table;
  const nlohmann::json j = diff_json(d);
  EXPECT_EQ(j["unit"], "s");
  EXPECT_EQ(j["rows"][0]["b"]["mean_us"], nullptr);
  EXPECT_DOUBLE_EQ(j["rows"][2]["ratio"].get<double>(), 1.5);
}

// Steps k = 1..5 on every rank: host range [base + k ms, base + (k+1) ms - 1].
void add_steps(LoadedDumps* d, const JobSpec& spec) {
  for (RankTimeline& t : d->ranks) {
    const uint64_t base = spec.mono_base + static_cast<uint64_t>(t.rank) * testing::kUs;
    for (uint64_t k = 1; k <= 5; ++k) {
      recorder::RecordData s;
      s.name = static_cast<uint16_t>(proto::OpName::kStep);
      s.kind = static_cast<uint8_t>(proto::OpKind::kRange);
      s.flags = recorder::kRecHost;
      s.state = static_cast<uint8_t>(recorder::OpState::kCompleted);
      s.host_start_ns = base + k * testing::kMs;
      s.host_end_ns = base + (k + 1) * testing::kMs - 1;
      t.ring.records.push_back(s);
    }
  }
}

// With steps, only the work launched within them counts: steps 1-5 hold two
// GEMMs (one timed) and one AllReduce each; step 6's are outside.
TEST_F(Diff, WithStepsEveryRowIsPerStepAndTheSlowedShapeHasItsRatio) {
  LoadedDumps a = load(a_.path()), b = load(b_.path());
  add_steps(&a, JobSpec{});
  add_steps(&b, JobSpec{});
  const TimelineDiff d = diff_timelines(a, "A", b, "B");
  EXPECT_TRUE(d.per_step);
  EXPECT_DOUBLE_EQ(d.a_units, 5.0);
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(d.rows[0].shape, "bytes=67108864");
  EXPECT_DOUBLE_EQ(d.rows[0].a.calls_per_unit, 1.0);
  EXPECT_DOUBLE_EQ(d.rows[0].change_ns(), -200000.0);
  EXPECT_EQ(d.rows[1].shape, "bytes=33554432");
  EXPECT_DOUBLE_EQ(d.rows[1].change_ns(), 120000.0);
  EXPECT_EQ(d.rows[2].op, "GemmEx");
  EXPECT_DOUBLE_EQ(d.rows[2].a.calls_per_unit, 2.0);
  EXPECT_DOUBLE_EQ(d.rows[2].a.unit_ns(), 200000.0);
  EXPECT_DOUBLE_EQ(d.rows[2].b.unit_ns(), 300000.0);
  EXPECT_DOUBLE_EQ(d.rows[2].ratio(), 1.5);
  const std::string table = diff_table(d);
  EXPECT_NE(table.find("A = A (4 ranks, 5 steps per rank), B = B (4 ranks, 5 steps per rank)"),
            std::string::npos)
      << table;
  EXPECT_NE(
      table.find("GemmEx                 bf16      m=4096 n=4096 k=1024 batch=1        2.00 "
                 "     100.0      0.200      2.00      150.0      0.300      +0.100    1.50\n"),
      std::string::npos)
      << table;
  // The trace: one step of A, then of B, slices end to end in the rows' order.
  const nlohmann::json t = diff_trace(d);
  std::vector<std::tuple<int, std::string, double, double>> slices;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X") {
      slices.emplace_back(e["pid"].get<int>(), e["name"].get<std::string>(), e["ts"].get<double>(),
                          e["dur"].get<double>());
    }
  }
  using S = std::tuple<int, std::string, double, double>;
  const std::vector<S> expected = {S{1, "AllReduce bf16 bytes=67108864", 0.0, 200.0},
                                   S{1, "GemmEx bf16 m=4096 n=4096 k=1024 batch=1", 200.0, 200.0},
                                   S{2, "AllReduce bf16 bytes=33554432", 0.0, 120.0},
                                   S{2, "GemmEx bf16 m=4096 n=4096 k=1024 batch=1", 120.0, 300.0}};
  EXPECT_EQ(slices, expected);
}

TEST_F(Diff, OneRankAgainstAWholeDumpIsPerRank) {
  // Rank 2 never issued AllReduce #6: 5 calls against 5.75 per rank.
  const TimelineDiff d = diff_timelines(load(a_.path(), 2), "A:2", load(a_.path()), "A");
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[0].op, "AllReduce");
  EXPECT_DOUBLE_EQ(d.rows[0].a.calls_per_rank, 5.0);
  EXPECT_DOUBLE_EQ(d.rows[0].b.total_ns() - d.rows[0].a.total_ns(), 0.75 * 200000.0);
  EXPECT_DOUBLE_EQ(d.rows[1].b.total_ns() - d.rows[1].a.total_ns(), 0.0);
}

}  // namespace
}  // namespace xpu_timer::timeline
