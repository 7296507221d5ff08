// Hook for cublasLtMatmul, which PyTorch uses for nn.Linear (addmm with
// bias) and for most bf16/fp8 matmuls. The shape is not in the arguments:
// it is read from the matrix layouts and the matmul descriptor with the
// real libcublasLt's getters (host-side reads of the descriptors).
#include <cublasLt.h>

#include "common/recorder_ring.h"
#include "inject/cublas_hook_template.h"
#include "inject/dtype_mapping.h"

namespace xpu_timer::inject {
namespace {

RealFunction<decltype(&::cublasLtMatmul)> real_lt_matmul(RealLib::kCublasLt, "cublasLtMatmul");
RealFunction<decltype(&::cublasLtMatrixLayoutGetAttribute)> real_layout_get(
    RealLib::kCublasLt, "cublasLtMatrixLayoutGetAttribute");
RealFunction<decltype(&::cublasLtMatmulDescGetAttribute)> real_desc_get(
    RealLib::kCublasLt, "cublasLtMatmulDescGetAttribute");

template <typename T>
bool layout_attr(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, T* out) {
  const auto get = real_layout_get.get();
  size_t written = 0;
  return get != nullptr && layout != nullptr &&
         get(layout, attr, out, sizeof(T), &written) == CUBLAS_STATUS_SUCCESS;
}

template <typename T>
bool desc_attr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, T* out) {
  const auto get = real_desc_get.get();
  size_t written = 0;
  return get != nullptr && desc != nullptr &&
         get(desc, attr, out, sizeof(T), &written) == CUBLAS_STATUS_SUCCESS;
}

// D = op(A) * op(B): m x n = D's rows x cols, k = the inner dimension of op(A).
OpDesc lt_matmul_desc(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_layout,
                      cublasLtMatrixLayout_t d_layout) {
  OpDesc d;
  d.name = proto::OpName::kLtMatmul;
  uint64_t a_rows = 0, a_cols = 0, d_rows = 0, d_cols = 0;
  int32_t batch = 1, trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N, compute = 0;
  uint32_t a_type = 0;
  bool ok = layout_attr(a_layout, CUBLASLT_MATRIX_LAYOUT_ROWS, &a_rows) &&
            layout_attr(a_layout, CUBLASLT_MATRIX_LAYOUT_COLS, &a_cols) &&
            layout_attr(d_layout, CUBLASLT_MATRIX_LAYOUT_ROWS, &d_rows) &&
            layout_attr(d_layout, CUBLASLT_MATRIX_LAYOUT_COLS, &d_cols);
  layout_attr(d_layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch);
  desc_attr(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a);
  desc_attr(desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b);
  d.gemm_ops = recorder::gemm_ops_of(trans_a, trans_b);  // a replay runs the same kernel
  desc_attr(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute);
  if (layout_attr(a_layout, CUBLASLT_MATRIX_LAYOUT_TYPE, &a_type)) {
    d.dtype = dtype_from_cuda(static_cast<int>(a_type), compute);
  }
  if (ok) {
    const uint64_t k = trans_a == CUBLAS_OP_N ? a_cols : a_rows;
    d.m = static_cast<uint32_t>(d_rows);
    d.n = static_cast<uint32_t>(d_cols);
    d.k = static_cast<uint32_t>(k);
    d.batch = static_cast<uint32_t>(batch < 1 ? 1 : batch);
    d.flops = gemm_flops(static_cast<int64_t>(d_rows), static_cast<int64_t>(d_cols),
                         static_cast<int64_t>(k), batch < 1 ? 1 : batch);
  }
  return d;
}

}  // namespace
}  // namespace xpu_timer::inject

using namespace xpu_timer::inject;  // NOLINT: the hook below is extern "C"

XPU_TIMER_HOOK cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha,
    const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
    const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
    cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
    size_t workspaceSizeInBytes, cudaStream_t stream) {
  return timed_blas_call(
      real_lt_matmul,
      [stream](RuntimeState*, cudaStream_t* s) {
        *s = stream;
        return true;
      },
      [&] { return lt_matmul_desc(computeDesc, Adesc, Ddesc); }, lightHandle, computeDesc, alpha, A,
      Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes, stream);
}
