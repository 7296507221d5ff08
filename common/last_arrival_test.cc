#include "common/last_arrival.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace xpu_timer {
namespace {

LastArrival of(const std::vector<std::pair<int, int64_t>>& v) {
  return last_arrival(
      v.size(), [&](size_t i) { return v[i].first; }, [&](size_t i) { return v[i].second; });
}

TEST(LastArrival, TheLatestArrivalAndItsMarginOverTheNextLatest) {
  const LastArrival la = of({{0, 100}, {1, 350}, {2, 300}, {3, 120}});
  ASSERT_TRUE(la.valid);
  EXPECT_EQ(la.last, 1u);
  EXPECT_EQ(la.second, 2u);
  EXPECT_EQ(la.margin_ns, 50);
}

TEST(LastArrival, ATieIsTheHigherRankByAMarginOfZero) {
  const LastArrival la = of({{5, 300}, {2, 300}, {1, 10}});
  ASSERT_TRUE(la.valid);
  EXPECT_EQ(la.last, 0u);  // rank 5
  EXPECT_EQ(la.second, 1u);
  EXPECT_EQ(la.margin_ns, 0);
}

TEST(LastArrival, OneMemberIsNobodysWait) {
  EXPECT_FALSE(of({{0, 1}}).valid);
  EXPECT_FALSE(of({}).valid);
}

}  // namespace
}  // namespace xpu_timer
