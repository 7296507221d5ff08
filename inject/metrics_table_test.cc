#include "inject/metrics_table.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "common/op_names.h"

namespace xpu_timer::inject {
namespace {

using proto::DType;
using proto::OpName;

MetricsTable::Key key(OpName n, DType t, uint8_t bucket, uint32_t nranks) {
  return MetricsTable::Key{static_cast<uint16_t>(n), static_cast<uint8_t>(t), bucket, nranks};
}

TEST(MetricsTable, AggregatesPerKeyWithHistogram) {
  auto t = std::make_unique<MetricsTable>();
  const auto ar = key(OpName::kAllReduce, DType::kF32, 20, 4);
  const auto gemm = key(OpName::kGemmEx, DType::kBF16, 30, 0);
  ASSERT_TRUE(t->add(ar, 15000, 1 << 20, 0, 100));  // 15 us -> bucket 1 (<= 20 us)
  ASSERT_TRUE(t->add(ar, 5000, 1 << 20, 0, 200));   // 5 us -> bucket 0
  ASSERT_TRUE(t->add(gemm, 1000000, 0, 1ull << 30, 300));
  ASSERT_EQ(t->size(), 2u);

  const proto::MetricSlot& s = t->slot(0);
  EXPECT_EQ(s.name, static_cast<uint16_t>(OpName::kAllReduce));
  EXPECT_EQ(s.dtype, static_cast<uint8_t>(DType::kF32));
  EXPECT_EQ(s.size_bucket, 20);
  EXPECT_EQ(s.nranks, 4u);
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.sum_ns, 20000u);
  EXPECT_EQ(s.sum_bytes, 2u << 20);
  EXPECT_EQ(s.sum_flops, 0u);
  EXPECT_EQ(s.last_update_ns, 200u);
  EXPECT_EQ(s.hist[0], 1u);
  EXPECT_EQ(s.hist[1], 1u);

  const proto::MetricSlot& g = t->slot(1);
  EXPECT_EQ(g.count, 1u);
  EXPECT_EQ(g.sum_flops, 1ull << 30);
  EXPECT_EQ(g.hist[proto::hist_bucket_for_ns(1000000)], 1u);
}

TEST(MetricsTable, DifferentNranksOrBucketAreDifferentKeys) {
  auto t = std::make_unique<MetricsTable>();
  ASSERT_TRUE(t->add(key(OpName::kAllReduce, DType::kF32, 20, 4), 1, 1, 0, 1));
  ASSERT_TRUE(t->add(key(OpName::kAllReduce, DType::kF32, 20, 8), 1, 1, 0, 1));
  ASSERT_TRUE(t->add(key(OpName::kAllReduce, DType::kF32, 21, 8), 1, 1, 0, 1));
  EXPECT_EQ(t->size(), 3u);
}

TEST(MetricsTable, DrainDirtyVisitsOnlyChangedSlots) {
  auto t = std::make_unique<MetricsTable>();
  t->add(key(OpName::kAllReduce, DType::kF32, 1, 2), 1, 1, 0, 1);
  t->add(key(OpName::kGemmEx, DType::kF32, 1, 0), 1, 0, 1, 1);
  std::vector<uint32_t> seen;
  t->drain_dirty([&](uint32_t i, const proto::MetricSlot&) { seen.push_back(i); });
  EXPECT_EQ(seen, (std::vector<uint32_t>{0, 1}));
  seen.clear();
  t->drain_dirty([&](uint32_t i, const proto::MetricSlot&) { seen.push_back(i); });
  EXPECT_TRUE(seen.empty());
  t->add(key(OpName::kGemmEx, DType::kF32, 1, 0), 1, 0, 1, 2);
  t->drain_dirty([&](uint32_t i, const proto::MetricSlot&) { seen.push_back(i); });
  EXPECT_EQ(seen, (std::vector<uint32_t>{1}));
}

TEST(MetricsTable, FullTableRefusesNewKeysButKeepsCountingOldOnes) {
  auto t = std::make_unique<MetricsTable>();
  for (int i = 0; i < proto::kMaxMetrics; ++i) {
    ASSERT_TRUE(t->add(key(OpName::kGemmEx, DType::kF32, static_cast<uint8_t>(i % 64),
                           static_cast<uint32_t>(i / 64)),
                       1, 0, 1, 1));
  }
  EXPECT_FALSE(t->add(key(OpName::kAllReduce, DType::kF32, 0, 99), 1, 1, 0, 1));
  EXPECT_TRUE(t->add(key(OpName::kGemmEx, DType::kF32, 0, 0), 1, 0, 1, 1));
  EXPECT_EQ(t->slot(0).count, 2u);
}

}  // namespace
}  // namespace xpu_timer::inject
