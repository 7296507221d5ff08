#include "inject/dtype_mapping.h"

#include <cublas_api.h>
#include <library_types.h>
#include <nccl.h>

namespace xpu_timer::inject {

using proto::DType;

DType dtype_from_cuda(int cuda_data_type, int compute_type) {
  switch (cuda_data_type) {
    case CUDA_R_32F:
      return compute_type == CUBLAS_COMPUTE_32F_FAST_TF32 ? DType::kTF32 : DType::kF32;
    case CUDA_R_16F:
      return DType::kF16;
    case CUDA_R_16BF:
      return DType::kBF16;
    case CUDA_R_64F:
      return DType::kF64;
    case CUDA_R_8F_E4M3:
      return DType::kF8E4M3;
    case CUDA_R_8F_E5M2:
      return DType::kF8E5M2;
    case CUDA_R_8I:
      return DType::kI8;
    case CUDA_R_8U:
      return DType::kU8;
    case CUDA_R_32I:
      return DType::kI32;
    case CUDA_R_64I:
      return DType::kI64;
    default:
      return DType::kUnknown;
  }
}

DType dtype_from_nccl(int nccl_data_type) {
  switch (nccl_data_type) {
    case ncclInt8:
      return DType::kI8;
    case ncclUint8:
      return DType::kU8;
    case ncclInt32:
      return DType::kI32;
    case ncclInt64:
      return DType::kI64;
    case ncclFloat16:
      return DType::kF16;
    case ncclFloat32:
      return DType::kF32;
    case ncclFloat64:
      return DType::kF64;
    case ncclBfloat16:
      return DType::kBF16;
    case ncclFloat8e4m3:
      return DType::kF8E4M3;
    case ncclFloat8e5m2:
      return DType::kF8E5M2;
    default:
      return DType::kUnknown;  // ncclUint32/ncclUint64 have no DType
  }
}

uint32_t nccl_type_size(int nccl_data_type) {
  switch (nccl_data_type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

uint64_t gemm_flops(int64_t m, int64_t n, int64_t k, int64_t batch) {
  if (m < 0 || n < 0 || k < 0 || batch < 0) return 0;
  unsigned __int128 f = 2;
  for (int64_t d : {m, n, k, batch}) {
    f *= static_cast<uint64_t>(d);  // both factors < 2^64: no overflow of 128 bits
    if (f > UINT64_MAX) return UINT64_MAX;
  }
  return static_cast<uint64_t>(f);
}

}  // namespace xpu_timer::inject
