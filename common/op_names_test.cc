#include "common/op_names.h"

#include <gtest/gtest.h>

namespace xpu_timer::proto {
namespace {

TEST(OpNames, NamesAndKinds) {
  EXPECT_STREQ(op_name_str(OpName::kAllReduce), "AllReduce");
  EXPECT_EQ(op_kind_of(OpName::kAllReduce), OpKind::kNccl);
  EXPECT_EQ(op_kind_of(OpName::kLtMatmul), OpKind::kGemm);
  EXPECT_EQ(op_kind_of(OpName::kMemcpyD2H), OpKind::kMemcpy);
  EXPECT_STREQ(op_name_str(static_cast<OpName>(999)), "Unknown");
}

}  // namespace
}  // namespace xpu_timer::proto
