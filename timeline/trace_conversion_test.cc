// The library call the supervisor uses (dumps held in memory) and the tool's
// path (the same folder loaded from its files) give the same trace, byte for
// byte: there is one conversion.
#include "timeline/trace_conversion.h"

#include <gtest/gtest.h>

#include "timeline/test_dumps.h"

namespace xpu_timer::timeline {
namespace {

using testing::JobSpec;
using testing::TempDir;

TEST(TraceConversion, ImagesInMemoryGiveTheTraceOfTheFolder) {
  TempDir dir;
  JobSpec spec;  // 4 ranks, rank 2 missing in AllReduce #6
  testing::write_job(dir.path(), spec, /*with_hang_json=*/true);
  const std::string hang = testing::hang_json(spec);

  LoadedDumps from_files;
  load_dumps({DumpSource{dir.path(), -1}}, &from_files);
  std::vector<RankImage> images;
  for (int r = 0; r < spec.world; ++r) {
    images.push_back(RankImage{r, spec.world, recorder::ring_image(testing::rank_snapshot(spec, r))});
  }
  const LoadedDumps in_memory = dumps_from_images(dir.path(), images, hang);
  EXPECT_EQ(in_memory.warnings, from_files.warnings);
  ASSERT_EQ(in_memory.ranks.size(), 4u);
  ASSERT_TRUE(in_memory.folders[0].verdict.has_value());

  TraceSummary a, b;
  std::vector<std::string> warnings_a, warnings_b;
  std::string error;
  ASSERT_TRUE(write_trace_file(from_files, TraceOptions{}, dir.path() + "/a.json", &a,
                               &warnings_a, &error))
      << error;
  ASSERT_TRUE(write_trace_file(in_memory, TraceOptions{}, dir.path() + "/b.json", &b,
                               &warnings_b, &error))
      << error;
  EXPECT_EQ(a.events, b.events);
  EXPECT_GT(a.flows, 0u);
  EXPECT_EQ(warnings_a, warnings_b);
  const std::string ta = TempDir::read(dir.path() + "/a.json");
  EXPECT_FALSE(ta.empty());
  EXPECT_EQ(ta, TempDir::read(dir.path() + "/b.json"));
  // The verdict is in it: the missing rank is marked.
  EXPECT_NE(ta.find("rank 2 missing"), std::string::npos);
}

TEST(TraceConversion, AnUnwritableOutputIsOneLine) {
  TempDir dir;
  JobSpec spec;
  testing::write_job(dir.path(), spec, false);
  LoadedDumps d;
  load_dumps({DumpSource{dir.path(), -1}}, &d);
  TraceSummary s;
  std::vector<std::string> warnings;
  std::string error;
  EXPECT_FALSE(write_trace_file(d, TraceOptions{}, dir.path() + "/no/such/dir/t.json", &s,
                                &warnings, &error));
  EXPECT_EQ(error.find("cannot create " + dir.path() + "/no/such/dir/t.json.tmp: "), 0u) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace xpu_timer::timeline
