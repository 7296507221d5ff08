#include "timeline/parallel_groups.h"

#include <gtest/gtest.h>

namespace xpu_timer::timeline {
namespace {

TEST(ParallelLayout, MegatronOrderFirstDimensionVariesFastest) {
  ParallelLayout l;
  std::string error;
  ASSERT_TRUE(ParallelLayout::parse("tp4-cp2-dp4-pp2", &l, &error)) << error;
  EXPECT_EQ(l.world_size(), 64);
  EXPECT_EQ(l.label(0), "tp0 cp0 dp0 pp0");
  EXPECT_EQ(l.label(3), "tp3 cp0 dp0 pp0");
  EXPECT_EQ(l.label(5), "tp1 cp1 dp0 pp0");
  EXPECT_EQ(l.label(13), "tp1 cp1 dp1 pp0");
  EXPECT_EQ(l.label(37), "tp1 cp1 dp0 pp1");
  EXPECT_EQ(l.label(63), "tp3 cp1 dp3 pp1");
  EXPECT_EQ(l.coords(37), (std::vector<int>{1, 1, 0, 1}));
}

TEST(ParallelLayout, MalformedSpecsSayWhy) {
  ParallelLayout l;
  std::string error;
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty layout: expected the form tp4-cp2-dp4-pp2"},
      {"tp4-", "'tp4-' is not of the form tp4-cp2-dp4-pp2"},
      {"4tp", "'4tp' is not of the form tp4-cp2-dp4-pp2"},
      {"tp4-cp2x", "'tp4-cp2x' is not of the form tp4-cp2-dp4-pp2"},
      {"TP4", "'TP4' is not of the form tp4-cp2-dp4-pp2"},
      {"tp0", "'tp0': a group size must be 1..1048576"},
      {"tp4-tp2", "'tp' appears twice in 'tp4-tp2'"},
      {"tp99999999", "'tp99999999' is not of the form tp4-cp2-dp4-pp2"},
      {"tp4096-dp4096-pp4", "'tp4096-dp4096-pp4' describes more than 16777216 ranks"},
  };
  for (const auto& [spec, why] : cases) {
    EXPECT_FALSE(ParallelLayout::parse(spec, &l, &error)) << spec;
    EXPECT_EQ(error, why) << spec;
  }
}

}  // namespace
}  // namespace xpu_timer::timeline
