#include "common/rank_set.h"

#include <gtest/gtest.h>

namespace xpu_timer {
namespace {

TEST(RankSet, FoldsConsecutiveRanksIntoRanges) {
  EXPECT_EQ(fold_ranks({0, 1, 2, 3, 6}), "0-3/6");
  EXPECT_EQ(fold_ranks({6, 3, 2, 1, 0, 3}), "0-3/6");
  EXPECT_EQ(fold_ranks({5}), "5");
  EXPECT_EQ(fold_ranks({}), "");
  EXPECT_EQ(fold_ranks({0, 2, 4, 5}), "0/2/4-5");
}

TEST(RankSet, ParsesWhatItFolds) {
  auto r = parse_rank_set("0-3/6");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(fold_ranks(*parse_rank_set("0/2/4-5")), "0/2/4-5");
}

TEST(RankSet, RejectsMalformedText) {
  EXPECT_FALSE(parse_rank_set("1-").has_value());
  EXPECT_FALSE(parse_rank_set("a").has_value());
  EXPECT_FALSE(parse_rank_set("3-1").has_value());
  EXPECT_FALSE(parse_rank_set("1//2").has_value());
  EXPECT_FALSE(parse_rank_set("99999999999").has_value());
}

TEST(RankSet, JoinsForSentences) { EXPECT_EQ(join_ranks({0, 1, 3}), "0,1,3"); }

}  // namespace
}  // namespace xpu_timer
