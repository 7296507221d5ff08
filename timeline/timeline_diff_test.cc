#include "timeline/timeline_diff.h"

#include <gtest/gtest.h>

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

TEST_F(Diff, RowsAreSortedByTheChangeOfTimeSpent) {
  const TimelineDiff d = diff_timelines(load(a_.path()), "A", load(b_.path()), "B");
  ASSERT_EQ(d.rows.size(), 3u);
  EXPECT_EQ(d.rows[0].shape, "bytes=67108864");
  EXPECT_EQ(d.rows[0].op, "AllReduce");
  EXPECT_DOUBLE_EQ(d.rows[0].a.calls_per_rank, 5.75);
  EXPECT_EQ(d.rows[0].a.timed, 20u);
  EXPECT_DOUBLE_EQ(d.rows[0].a.mean_ns(), 200000.0);
  EXPECT_EQ(d.rows[0].b.calls, 0u);
  EXPECT_DOUBLE_EQ(d.rows[0].change_ns(), -1150000.0);
  EXPECT_EQ(d.rows[1].shape, "bytes=33554432");
  EXPECT_DOUBLE_EQ(d.rows[1].change_ns(), 5.75 * 120000.0);
  EXPECT_EQ(d.rows[2].op, "GemmEx");
  EXPECT_EQ(d.rows[2].dtype, "bf16");
  EXPECT_EQ(d.rows[2].shape, "m=4096 n=4096 k=1024 batch=1");
  EXPECT_DOUBLE_EQ(d.rows[2].a.calls_per_rank, 12.0);
  EXPECT_DOUBLE_EQ(d.rows[2].b.mean_ns(), 150000.0);
  EXPECT_DOUBLE_EQ(d.rows[2].change_ns(), 12 * 50000.0);

  const std::string table = diff_table(d);
  const size_t first = table.find("bytes=67108864"), second = table.find("bytes=33554432"),
               third = table.find("m=4096 n=4096 k=1024 batch=1");
  ASSERT_NE(first, std::string::npos) << table;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_NE(table.find("-1.150"), std::string::npos) << table;
  EXPECT_NE(table.find("+0.600"), std::string::npos) << table;
  const nlohmann::json j = diff_json(d);
  EXPECT_EQ(j["rows"][0]["b"]["mean_us"], nullptr);
  EXPECT_DOUBLE_EQ(j["rows"][2]["change_us_per_rank"].get<double>(), 600.0);
}

TEST_F(Diff, OneRankAgainstAWholeDumpIsPerRank) {
  // Rank 2 never issued AllReduce #6: 5 calls against 5.75 per rank.
  const TimelineDiff d = diff_timelines(load(a_.path(), 2), "A:2", load(a_.path()), "A");
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[0].op, "AllReduce");
  EXPECT_DOUBLE_EQ(d.rows[0].a.calls_per_rank, 5.0);
  EXPECT_DOUBLE_EQ(d.rows[0].change_ns(), 0.75 * 200000.0);
  EXPECT_DOUBLE_EQ(d.rows[1].change_ns(), 0.0);
}

}  // namespace
}  // namespace xpu_timer::timeline
