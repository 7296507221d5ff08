#include "flamegraph/rank_bits.h"

#include <gtest/gtest.h>

namespace xpu_timer::flamegraph {
namespace {

TEST(RankBits, KeepsSortedUniqueMembersInAnyOrder) {
  RankBits b;
  for (uint32_t r : {5u, 1u, 5u, 3u, 1u, 0u}) b.add(r);
  EXPECT_EQ(b.count(), 4u);
  EXPECT_EQ(b.to_vector(), (std::vector<int>{0, 1, 3, 5}));
  EXPECT_EQ(b.complement(7), (std::vector<int>{2, 4, 6}));
  EXPECT_FALSE(b.contains(2));
}

TEST(RankBits, SwitchesToBitsetBeyondThirtyTwoMembersWithoutLosingAny) {
  RankBits b;
  for (uint32_t r = 1000; r-- > 0;) {
    if (r % 3 == 0) b.add(r);
  }
  b.add(999);  // again
  EXPECT_EQ(b.count(), 334u);
  const std::vector<int> v = b.to_vector();
  ASSERT_EQ(v.size(), 334u);
  EXPECT_EQ(v.front(), 0);
  EXPECT_EQ(v.back(), 999);
  EXPECT_EQ(b.complement(1001).size(), 1001u - 334u);
  EXPECT_TRUE(b.contains(300));
  EXPECT_FALSE(b.contains(301));
  EXPECT_FALSE(b.contains(5000));
}

}  // namespace
}  // namespace xpu_timer::flamegraph
