// Hook for cublasLtMatmul, which PyTorch uses for nn.Linear (addmm with
// bias) and for most bf16/fp8 matmuls. The shape is not in the arguments:
// it is read from the matrix layouts and the matmul descriptor with the
// real libcublasLt's getters (host-side reads of the descriptors), eight
// calls. A timed call always makes them; a sampled-out one finds the shape
// in a per-thread cache keyed by the bytes of the A and D layouts (below).
#include <cublasLt.h>

#include <atomic>
#include <cstring>

#include "common/recorder_ring.h"
#include "inject/call_cache.h"
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

// The layout attributes the shape and dtype come from.
struct LayoutShape {
  uint64_t a_rows = 0, a_cols = 0, d_rows = 0, d_cols = 0;
  int32_t batch = 1;
  uint32_t a_type = 0;
  bool ok = false;  // rows and cols of A and D read (else the shape is unknown)
  bool a_type_ok = false;
  // op(A), op(B) (recorder::gemm_ops_of) as the last timed call with these
  // layouts read them from the matmul descriptor; 0 until one did. Not part
  // of the layouts: same() leaves it out.
  uint8_t gemm_ops = 0;
};

bool same(const LayoutShape& x, const LayoutShape& y) {
  return x.ok == y.ok && x.a_type_ok == y.a_type_ok && x.a_rows == y.a_rows &&
         x.a_cols == y.a_cols && x.d_rows == y.d_rows && x.d_cols == y.d_cols &&
         x.batch == y.batch && x.a_type == y.a_type;
}

LayoutShape read_layouts(cublasLtMatrixLayout_t a_layout, cublasLtMatrixLayout_t d_layout) {
  LayoutShape s;
  s.ok = layout_attr(a_layout, CUBLASLT_MATRIX_LAYOUT_ROWS, &s.a_rows) &&
         layout_attr(a_layout, CUBLASLT_MATRIX_LAYOUT_COLS, &s.a_cols) &&
         layout_attr(d_layout, CUBLASLT_MATRIX_LAYOUT_ROWS, &s.d_rows) &&
         layout_attr(d_layout, CUBLASLT_MATRIX_LAYOUT_COLS, &s.d_cols);
  layout_attr(d_layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &s.batch);
  s.a_type_ok = layout_attr(a_layout, CUBLASLT_MATRIX_LAYOUT_TYPE, &s.a_type);
  return s;
}

// D = op(A) * op(B): m x n = D's rows x cols, k the inner dimension of op(A).
OpDesc desc_of(const LayoutShape& s, uint64_t k, int32_t compute) {
  OpDesc d;
  d.name = proto::OpName::kLtMatmul;
  d.gemm_ops = s.gemm_ops;  // a replay runs the same kernel
  if (s.a_type_ok) d.dtype = dtype_from_cuda(static_cast<int>(s.a_type), compute);
  if (s.ok) {
    const int32_t batch = s.batch < 1 ? 1 : s.batch;
    d.m = static_cast<uint32_t>(s.d_rows);
    d.n = static_cast<uint32_t>(s.d_cols);
    d.k = static_cast<uint32_t>(k);
    d.batch = static_cast<uint32_t>(batch);
    d.flops = gemm_flops(static_cast<int64_t>(s.d_rows), static_cast<int64_t>(s.d_cols),
                         static_cast<int64_t>(k), batch);
  }
  return d;
}

// Exact: every attribute from cuBLASLt (timed calls).
OpDesc lt_matmul_desc(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_layout,
                      cublasLtMatrixLayout_t d_layout, LayoutShape* shape) {
  *shape = read_layouts(a_layout, d_layout);
  int32_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N, compute = 0;
  desc_attr(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a);
  desc_attr(desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b);
  shape->gemm_ops = recorder::gemm_ops_of(trans_a, trans_b);
  desc_attr(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute);
  return desc_of(*shape, trans_a == CUBLAS_OP_N ? shape->a_cols : shape->a_rows, compute);
}

// The cache key: the bytes of the A and D layouts. cublasLtMatrixLayoutInit
// initialises a caller-owned cublasLtMatrixLayoutOpaque_t and has no
// counterpart that releases anything, so a layout's whole state is in those
// 64 bytes: equal bytes read equal attributes, whatever address they are at
// (PyTorch creates and destroys the descriptors on every call, and the
// allocator hands the same addresses back with other shapes in them).
struct LayoutBytes {
  cublasLtMatrixLayoutOpaque_t a, d;
};
__attribute__((tls_model("initial-exec"))) thread_local CallCache<LayoutBytes, LayoutShape>
    t_shapes;
// Off for the rest of the process when a timed call ever reads other
// attributes than the cache held for the same bytes (a cuBLASLt whose
// layouts keep state elsewhere): then every call reads them again.
std::atomic<bool> g_cache_off{false};

// Without a library call when the layouts were seen before on this thread.
// k comes from op(A) being m x k whichever way A is stored (rows x cols =
// m x k = k x m): no TRANSA read. Only an f32 A reads the compute type
// (f32 or tf32: the other dtypes do not depend on it).
OpDesc cheap_desc(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_layout,
                  cublasLtMatrixLayout_t d_layout) {
  LayoutShape s;
  const bool cached =
      a_layout != nullptr && d_layout != nullptr && !g_cache_off.load(std::memory_order_relaxed);
  LayoutBytes key;
  if (cached) {
    std::memcpy(&key.a, a_layout, sizeof(key.a));
    std::memcpy(&key.d, d_layout, sizeof(key.d));
  }
  if (!cached || !t_shapes.find(key, &s)) {
    s = read_layouts(a_layout, d_layout);
    if (cached) t_shapes.store(key, s);
  }
  int32_t compute = 0;
  if (s.a_type_ok && s.a_type == CUDA_R_32F) {
    desc_attr(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute);
  }
  const uint64_t k = s.d_rows != 0 ? s.a_rows * s.a_cols / s.d_rows : 0;
  return desc_of(s, k, compute);
}

// A timed call: the exact description, checked against what the cache gave.
bool exact_desc(RuntimeState* st, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_layout,
                cublasLtMatrixLayout_t d_layout, OpDesc* d) {
  LayoutShape read;
  *d = lt_matmul_desc(desc, a_layout, d_layout, &read);
  if (a_layout == nullptr || d_layout == nullptr || g_cache_off.load(std::memory_order_relaxed)) {
    return true;
  }
  LayoutBytes key;
  std::memcpy(&key.a, a_layout, sizeof(key.a));
  std::memcpy(&key.d, d_layout, sizeof(key.d));
  LayoutShape cached;
  if (t_shapes.find(key, &cached) && !same(cached, read)) {
    if (!g_cache_off.exchange(true, std::memory_order_relaxed)) {
      st->counters.hook_errors.fetch_add(1, std::memory_order_relaxed);
    }
  } else if (cached.gemm_ops != read.gemm_ops) {
    // The transposes are in the matmul descriptor, not in the key: sampled-out
    // calls with these layouts are labelled with the last timed call's (a
    // label only: their shape and FLOPs come from the layouts).
    t_shapes.store(key, read);
  }
  return true;
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
      real_lt_matmul, [&] { return cheap_desc(computeDesc, Adesc, Ddesc); },
      [stream] { return stream; },
      [&](RuntimeState* st, OpDesc* d, cudaStream_t*) {
        return exact_desc(st, computeDesc, Adesc, Ddesc, d);
      },
      lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
      workspace, workspaceSizeInBytes, stream);
}
