// The C signatures of cublasGemmEx and cublasGemmStridedBatchedEx, for code
// that calls them through a pointer found at run time (inject's hooks, the
// GEMM replay tool). cublas_api.h adds C++ inline overloads of both taking a
// cudaDataType compute type, so decltype(&name) would be ambiguous.
#pragma once

#include <cublas_v2.h>

namespace xpu_timer {

using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
    cudaDataType, int, long long int, const void*, cudaDataType, int, long long int, const void*,
    void*, cudaDataType, int, long long int, int, cublasComputeType_t, cublasGemmAlgo_t);

}  // namespace xpu_timer
