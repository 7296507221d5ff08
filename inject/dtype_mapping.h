// Pure mappings from the libraries' enums to the page's DType, byte sizes of
// NCCL element types, and the log2 size buckets of the metrics. Any thread.
#pragma once

#include <cstdint>

#include "common/op_names.h"
#include "common/status_page_layout.h"

namespace xpu_timer::inject {

// cudaDataType value (library_types.h) -> DType; complex and exotic types are
// kUnknown. `compute_type` is the cublasComputeType_t value (0 = not known):
// fp32 inputs with CUBLAS_COMPUTE_32F_FAST_TF32 are reported as tf32.
proto::DType dtype_from_cuda(int cuda_data_type, int compute_type = 0);
// ncclDataType_t value -> DType.
proto::DType dtype_from_nccl(int nccl_data_type);
// Bytes of one element of an ncclDataType_t (0 when unknown).
uint32_t nccl_type_size(int nccl_data_type);
// The size_bucket of a metric key (common/status_page_layout.h).
using proto::log2_bucket;
// 2*b*m*n*k, saturating instead of overflowing, 0 for negative dimensions.
uint64_t gemm_flops(int64_t m, int64_t n, int64_t k, int64_t batch);

}  // namespace xpu_timer::inject
