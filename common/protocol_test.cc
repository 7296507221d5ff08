#include "common/protocol.h"

#include <gtest/gtest.h>

#include <memory>

namespace xpu_timer::proto {
namespace {

TEST(Protocol, HistogramBucketsMatchTheirBounds) {
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

TEST(Protocol, OpNamesAndKinds) {
  EXPECT_STREQ(op_name_str(OpName::kAllReduce), "AllReduce");
  EXPECT_EQ(op_kind_of(OpName::kAllReduce), OpKind::kNccl);
  EXPECT_EQ(op_kind_of(OpName::kLtMatmul), OpKind::kGemm);
  EXPECT_EQ(op_kind_of(OpName::kMemcpyD2H), OpKind::kMemcpy);
  EXPECT_STREQ(op_name_str(static_cast<OpName>(999)), "Unknown");
}

TEST(Protocol, SeqlockReadRefusesAPageBeingWritten) {
  auto page = std::make_unique<StatusPage>();
  page->issued_total = 7;
  page->seq.store(3);  // odd: a writer is in the middle of an update
  auto copy = std::make_unique<StatusPage>();
  EXPECT_FALSE(read_status_page(page.get(), copy.get(), 4));
  page->seq.store(4);
  ASSERT_TRUE(read_status_page(page.get(), copy.get(), 4));
  EXPECT_EQ(copy->issued_total, 7u);
}

}  // namespace
}  // namespace xpu_timer::proto
