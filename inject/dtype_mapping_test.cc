#include "inject/dtype_mapping.h"

#include <cublas_api.h>
#include <gtest/gtest.h>
#include <library_types.h>
#include <nccl.h>

namespace xpu_timer::inject {
namespace {

using proto::DType;

TEST(DtypeMapping, CudaDataTypes) {
  EXPECT_EQ(dtype_from_cuda(CUDA_R_32F), DType::kF32);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32), DType::kTF32);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_32F, CUBLAS_COMPUTE_32F), DType::kF32);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_16F), DType::kF16);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_16BF, CUBLAS_COMPUTE_32F), DType::kBF16);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_64F), DType::kF64);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_8F_E4M3), DType::kF8E4M3);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_8F_E5M2), DType::kF8E5M2);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_8I), DType::kI8);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_8U), DType::kU8);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_32I), DType::kI32);
  EXPECT_EQ(dtype_from_cuda(CUDA_R_64I), DType::kI64);
  EXPECT_EQ(dtype_from_cuda(CUDA_C_32F), DType::kUnknown);
  EXPECT_EQ(dtype_from_cuda(12345), DType::kUnknown);
}

TEST(DtypeMapping, NcclDataTypesAndSizes) {
  EXPECT_EQ(dtype_from_nccl(ncclFloat32), DType::kF32);
  EXPECT_EQ(dtype_from_nccl(ncclBfloat16), DType::kBF16);
  EXPECT_EQ(dtype_from_nccl(ncclFloat16), DType::kF16);
  EXPECT_EQ(dtype_from_nccl(ncclInt8), DType::kI8);
  EXPECT_EQ(dtype_from_nccl(ncclUint8), DType::kU8);
  EXPECT_EQ(dtype_from_nccl(ncclInt64), DType::kI64);
  EXPECT_EQ(dtype_from_nccl(ncclFloat8e4m3), DType::kF8E4M3);
  EXPECT_EQ(dtype_from_nccl(ncclUint32), DType::kUnknown);
  EXPECT_EQ(nccl_type_size(ncclFloat32), 4u);
  EXPECT_EQ(nccl_type_size(ncclBfloat16), 2u);
  EXPECT_EQ(nccl_type_size(ncclFloat64), 8u);
  EXPECT_EQ(nccl_type_size(ncclUint8), 1u);
  EXPECT_EQ(nccl_type_size(ncclNumTypes), 0u);
}

TEST(DtypeMapping, Log2Buckets) {
  EXPECT_EQ(log2_bucket(0), 0);
  EXPECT_EQ(log2_bucket(1), 0);
  EXPECT_EQ(log2_bucket(2), 1);
  EXPECT_EQ(log2_bucket(1023), 9);
  EXPECT_EQ(log2_bucket(1024), 10);
  EXPECT_EQ(log2_bucket(UINT64_MAX), 63);
}

TEST(DtypeMapping, GemmFlops) {
  EXPECT_EQ(gemm_flops(64, 128, 256, 1), 2ull * 64 * 128 * 256);
  EXPECT_EQ(gemm_flops(64, 128, 256, 8), 8 * 2ull * 64 * 128 * 256);
  EXPECT_EQ(gemm_flops(-1, 128, 256, 1), 0u);
  EXPECT_EQ(gemm_flops(1ll << 40, 1ll << 40, 1ll << 40, 1), UINT64_MAX);  // saturates
}

}  // namespace
}  // namespace xpu_timer::inject
