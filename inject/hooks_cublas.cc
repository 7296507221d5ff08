// Hooks for the cuBLAS GEMM entry points PyTorch and Megatron use. Each
// replaces the libcublas symbol for the whole process (LD_PRELOAD) and
// forwards to the real one found in the loaded libcublas.
#include <cublas_v2.h>

#include "common/cublas_gemm_types.h"
#include "common/recorder_ring.h"
#include "inject/cublas_hook_template.h"
#include "inject/dtype_mapping.h"

namespace xpu_timer::inject {
namespace {

using proto::DType;
using proto::OpName;

RealFunction<decltype(&::cublasGetStream_v2)> real_get_stream(RealLib::kCublas,
                                                              "cublasGetStream_v2");

RealFunction<GemmExFn> real_gemm_ex(RealLib::kCublas, "cublasGemmEx");
RealFunction<GemmStridedBatchedExFn> real_gemm_sb_ex(RealLib::kCublas,
                                                     "cublasGemmStridedBatchedEx");
RealFunction<decltype(&::cublasSgemm_v2)> real_sgemm(RealLib::kCublas, "cublasSgemm_v2");
RealFunction<decltype(&::cublasHgemm)> real_hgemm(RealLib::kCublas, "cublasHgemm");
RealFunction<decltype(&::cublasSgemmStridedBatched)> real_sgemm_sb(RealLib::kCublas,
                                                                   "cublasSgemmStridedBatched");
RealFunction<decltype(&::cublasHgemmStridedBatched)> real_hgemm_sb(RealLib::kCublas,
                                                                   "cublasHgemmStridedBatched");

OpDesc gemm_desc(OpName name, DType dtype, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                 int k, int batch) {
  OpDesc d;
  d.gemm_ops = recorder::gemm_ops_of(ta, tb);  // a replay runs the same kernel
  d.name = name;
  d.dtype = dtype;
  d.flops = gemm_flops(m, n, k, batch);
  d.m = m > 0 ? static_cast<uint32_t>(m) : 0;
  d.n = n > 0 ? static_cast<uint32_t>(n) : 0;
  d.k = k > 0 ? static_cast<uint32_t>(k) : 0;
  d.batch = batch > 0 ? static_cast<uint32_t>(batch) : 0;
  return d;
}

// Timed calls only: the handle's stream, from cuBLAS.
auto handle_stream(cublasHandle_t handle) {
  return [handle](RuntimeState* st, OpDesc*, cudaStream_t* s) {
    return cublas_stream_of(st, handle, s);
  };
}
auto last_stream(cublasHandle_t handle) {
  return [handle] { return cublas_last_stream(handle); };
}

// Per thread, the streams of the last few handles seen by a timed call
// (PyTorch keeps one handle per thread and device). A stale entry (the
// program set another stream since) only misplaces an untimed GEMM's track
// in a timeline: hang detection and the metrics never read it.
struct KnownStream {
  cublasHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
};
constexpr int kKnownStreams = 4;
__attribute__((tls_model("initial-exec"))) thread_local KnownStream t_known[kKnownStreams];
__attribute__((tls_model("initial-exec"))) thread_local unsigned t_known_next = 0;

void remember_stream(cublasHandle_t handle, cudaStream_t stream) {
  for (KnownStream& k : t_known) {
    if (k.handle == handle) {
      k.stream = stream;
      return;
    }
  }
  t_known[t_known_next++ % kKnownStreams] = KnownStream{handle, stream};
}

}  // namespace

bool cublas_stream_of(RuntimeState* st, cublasHandle_t handle, cudaStream_t* stream) {
  const auto get = real_get_stream.get();
  if (get != nullptr && get(handle, stream) == CUBLAS_STATUS_SUCCESS) {
    remember_stream(handle, *stream);
    return true;
  }
  st->counters.hook_errors.fetch_add(1, std::memory_order_relaxed);
  return false;
}

cudaStream_t cublas_last_stream(cublasHandle_t handle) {
  for (const KnownStream& k : t_known) {
    if (k.handle == handle) return k.stream;
  }
  return nullptr;
}

}  // namespace xpu_timer::inject

using namespace xpu_timer::inject;  // NOLINT: hook definitions below are extern "C"
using xpu_timer::proto::DType;
using xpu_timer::proto::OpName;

XPU_TIMER_HOOK cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int m, int n, int k,
                                           const void* alpha, const void* A, cudaDataType Atype,
                                           int lda, const void* B, cudaDataType Btype, int ldb,
                                           const void* beta, void* C, cudaDataType Ctype, int ldc,
                                           cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return timed_blas_call(
      real_gemm_ex,
      [&] {
        return gemm_desc(OpName::kGemmEx, dtype_from_cuda(Atype, computeType), transa, transb, m, n,
                         k, 1);
      },
      last_stream(handle), handle_stream(handle), handle, transa, transb, m, n, k, alpha, A, Atype,
      lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo);
}

XPU_TIMER_HOOK cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
    const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return timed_blas_call(
      real_gemm_sb_ex,
      [&] {
        return gemm_desc(OpName::kGemmStridedBatchedEx, dtype_from_cuda(Atype, computeType), transa,
                         transb, m, n, k, batchCount);
      },
      last_stream(handle), handle_stream(handle), handle, transa, transb, m, n, k, alpha, A, Atype,
      lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType,
      algo);
}

XPU_TIMER_HOOK cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int m, int n, int k,
                                             const float* alpha, const float* A, int lda,
                                             const float* B, int ldb, const float* beta, float* C,
                                             int ldc) {
  return timed_blas_call(
      real_sgemm,
      [&] { return gemm_desc(OpName::kSgemm, DType::kF32, transa, transb, m, n, k, 1); },
      last_stream(handle), handle_stream(handle), handle, transa, transb, m, n, k, alpha, A, lda, B,
      ldb, beta, C, ldc);
}

XPU_TIMER_HOOK cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const __half* alpha, const __half* A, int lda,
                                          const __half* B, int ldb, const __half* beta, __half* C,
                                          int ldc) {
  return timed_blas_call(
      real_hgemm,
      [&] { return gemm_desc(OpName::kHgemm, DType::kF16, transa, transb, m, n, k, 1); },
      last_stream(handle), handle_stream(handle), handle, transa, transb, m, n, k, alpha, A, lda, B,
      ldb, beta, C, ldc);
}

XPU_TIMER_HOOK cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const float* alpha, const float* A, int lda, long long int strideA, const float* B, int ldb,
    long long int strideB, const float* beta, float* C, int ldc, long long int strideC,
    int batchCount) {
  return timed_blas_call(
      real_sgemm_sb,
      [&] {
        return gemm_desc(OpName::kSgemmStridedBatched, DType::kF32, transa, transb, m, n, k,
                         batchCount);
      },
      last_stream(handle), handle_stream(handle), handle, transa, transb, m, n, k, alpha, A, lda,
      strideA, B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}

XPU_TIMER_HOOK cublasStatus_t cublasHgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const __half* alpha, const __half* A, int lda, long long int strideA, const __half* B, int ldb,
    long long int strideB, const __half* beta, __half* C, int ldc, long long int strideC,
    int batchCount) {
  return timed_blas_call(
      real_hgemm_sb,
      [&] {
        return gemm_desc(OpName::kHgemmStridedBatched, DType::kF16, transa, transb, m, n, k,
                         batchCount);
      },
      last_stream(handle), handle_stream(handle), handle, transa, transb, m, n, k, alpha, A, lda,
      strideA, B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}
