// The simulated libcublas.so.13: handles and the GEMM entry points PyTorch
// uses. A GEMM validates its shape as cuBLAS does and puts one simulated
// kernel on the handle's stream; operands are never read.
#include <cublas_v2.h>

#include <cstdint>

#include "tests/simgpu/gemm_time.h"
#include "tests/simgpu/sim_ext.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

namespace {

bool valid_op(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

// Validation and enqueue shared by every GEMM flavour (column-major, as cuBLAS).
cublasStatus_t gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                    int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, int64_t batch) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid_op(ta) || !valid_op(tb) || m < 0 || n < 0 || k < 0 || batch < 0) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const int64_t rows_a = ta == CUBLAS_OP_N ? m : k;
  const int64_t rows_b = tb == CUBLAS_OP_N ? k : n;
  if (lda < (rows_a > 1 ? rows_a : 1) || ldb < (rows_b > 1 ? rows_b : 1) || ldc < (m > 1 ? m : 1)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const uint64_t ns = xpu_timer::simgpu::gemm_duration_ns(m, n, k, batch);
  if (xpu_sim_launch_kernel(handle->stream, ns) != cudaSuccess) {
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new (std::nothrow) cublasContext();
  return *handle != nullptr ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  XPU_SIM_ENTRY();
  xpu_sim_count_call(XPU_SIM_CUBLAS_GET_STREAM);
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  XPU_SIM_ENTRY();
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "<unknown>";
  }
}

const char* cublasGetStatusString(cublasStatus_t status) {
  XPU_SIM_ENTRY();
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    default:
      return "unknown error";
  }
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo) {
  XPU_SIM_ENTRY();
  (void)alpha, (void)A, (void)Atype, (void)B, (void)Btype, (void)beta, (void)C, (void)Ctype;
  (void)computeType, (void)algo;
  return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, 1);
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                               cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                               const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
                               const void* B, cudaDataType Btype, int64_t ldb, const void* beta,
                               void* C, cudaDataType Ctype, int64_t ldc,
                               cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  XPU_SIM_ENTRY();
  (void)alpha, (void)A, (void)Atype, (void)B, (void)Btype, (void)beta, (void)C, (void)Ctype;
  (void)computeType, (void)algo;
  return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, 1);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  XPU_SIM_ENTRY();
  (void)alpha, (void)A, (void)Atype, (void)B, (void)Btype, (void)beta, (void)C, (void)Ctype;
  (void)strideA, (void)strideB, (void)strideC, (void)computeType, (void)algo;
  return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
    long long int strideA, const void* B, cudaDataType Btype, int64_t ldb, long long int strideB,
    const void* beta, void* C, cudaDataType Ctype, int64_t ldc, long long int strideC,
    int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  XPU_SIM_ENTRY();
  (void)alpha, (void)A, (void)Atype, (void)B, (void)Btype, (void)beta, (void)C, (void)Ctype;
  (void)strideA, (void)strideB, (void)strideC, (void)computeType, (void)algo;
  return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const float* alpha,
                              const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc) {
  XPU_SIM_ENTRY();
  (void)alpha, (void)A, (void)B, (void)beta, (void)C;
  return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, 1);
}

cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const __half* alpha,
                           const __half* A, int lda, const __half* B, int ldb, const __half* beta,
                           __half* C, int ldc) {
  XPU_SIM_ENTRY();
  (void)alpha, (void)A, (void)B, (void)beta, (void)C;
  return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float* alpha, const float* A, int lda,
                                         long long int strideA, const float* B, int ldb,
                                         long long int strideB, const float* beta, float* C,
                                         int ldc, long long int strideC, int batchCount) {
  XPU_SIM_ENTRY();
  (void)alpha, (void)A, (void)B, (void)beta, (void)C, (void)strideA, (void)strideB;
  (void)strideC;
  return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const __half* alpha, const __half* A, int lda,
                                         long long int strideA, const __half* B, int ldb,
                                         long long int strideB, const __half* beta, __half* C,
                                         int ldc, long long int strideC, int batchCount) {
  XPU_SIM_ENTRY();
  (void)alpha, (void)A, (void)B, (void)beta, (void)C, (void)strideA, (void)strideB;
  (void)strideC;
  return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

}  // extern "C"
