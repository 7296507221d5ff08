#include "common/status_page_layout.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace xpu_timer::proto {
namespace {

TEST(StatusPageLayout, HistogramBucketsMatchTheirBounds) {
  EXPECT_EQ(hist_bucket_for_ns(0), 0);
  EXPECT_EQ(hist_bucket_for_ns(10000), 0);
  EXPECT_EQ(hist_bucket_for_ns(10001), 1);
  EXPECT_EQ(hist_bucket_for_ns(1'000'000), 7);  // 1 ms <= 1.28 ms
  EXPECT_EQ(hist_bucket_for_ns(100'000'000'000ull), kHistBuckets - 1);
  for (int i = 0; i < kHistBuckets - 1; ++i) {
    const auto ns = static_cast<uint64_t>(kHistUpperBoundsSeconds[i] * 1e9 + 0.5);
    EXPECT_EQ(hist_bucket_for_ns(ns), i) << "bound " << i;
  }
}

}  // namespace
}  // namespace xpu_timer::proto
