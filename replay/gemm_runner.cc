#include "replay/gemm_runner.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <random>

#include "common/op_names.h"
#include "common/recorder_ring.h"

namespace xpu_timer::replay {
namespace {

using proto::DType;
using proto::OpName;

constexpr size_t kWorkspaceBytes = 32u << 20;
constexpr size_t kFillChunk = 4u << 20;

// What cuBLAS is given for a dtype, as PyTorch calls it: 16-bit and fp8
// inputs accumulate in fp32 (fp8 writes bf16), TF32 is fp32 data with the
// TF32 compute type, int8 accumulates in int32.
struct Types {
  cudaDataType a, b, c;
  cublasComputeType_t compute;
  cudaDataType scale;
  size_t a_bytes, b_bytes, c_bytes, scale_bytes;
};

bool types_of(const GemmKey& key, Types* t, std::string* why) {
  const auto api = static_cast<OpName>(key.api);
  DType dtype = static_cast<DType>(key.dtype);
  if (api == OpName::kSgemm || api == OpName::kSgemmStridedBatched) dtype = DType::kF32;
  if (api == OpName::kHgemm || api == OpName::kHgemmStridedBatched) {
    *t = {CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, CUDA_R_16F, 2, 2, 2, 2};
    return true;
  }
  switch (dtype) {
    case DType::kF32:
      *t = {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 4, 4, 4, 4};
      return true;
    case DType::kTF32:
      *t = {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, 4,
            4,          4,          4};
      return true;
    case DType::kF16:
      *t = {CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2, 2, 2, 4};
      return true;
    case DType::kBF16:
      *t = {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, 2, 2, 2, 4};
      return true;
    case DType::kF64:
      *t = {CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F, 8, 8, 8, 8};
      return true;
    case DType::kF8E4M3:
    case DType::kF8E5M2: {
      const cudaDataType f8 = dtype == DType::kF8E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
      *t = {f8, CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, 1, 1, 2, 4};
      return true;
    }
    case DType::kI8:
      *t = {CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I, 1, 1, 4, 4};
      return true;
    default:
      *why = std::string("dtype ") + proto::dtype_str(dtype) + " is not replayed";
      return false;
  }
}

// Small finite values of the type: random mantissas, exponents near 1, so
// that no NaN or infinity slows or speeds anything.
void fill_pattern(cudaDataType type, std::vector<unsigned char>* out) {
  std::mt19937 rng(20261126);
  unsigned char* p = out->data();
  const size_t n = out->size();
  auto put16 = [&](size_t i, uint16_t v) { std::memcpy(p + 2 * i, &v, 2); };
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  switch (type) {
    case CUDA_R_32F:
      for (size_t i = 0; i + 4 <= n; i += 4) {
        const float v = uni(rng);
        std::memcpy(p + i, &v, 4);
      }
      break;
    case CUDA_R_64F:
      for (size_t i = 0; i + 8 <= n; i += 8) {
        const double v = uni(rng);
        std::memcpy(p + i, &v, 8);
      }
      break;
    case CUDA_R_16F:  // sign, exponent 13 or 14 (0.25 .. 1), random mantissa
      for (size_t i = 0; 2 * i + 2 <= n; ++i) {
        const uint32_t r = rng();
        put16(i, static_cast<uint16_t>((r & 0x83FF) | ((13 + ((r >> 10) & 1)) << 10)));
      }
      break;
    case CUDA_R_16BF:  // sign, exponent 125 or 126 (0.25 .. 1), random mantissa
      for (size_t i = 0; 2 * i + 2 <= n; ++i) {
        const uint32_t r = rng();
        put16(i, static_cast<uint16_t>((r & 0x807F) | ((125 + ((r >> 7) & 1)) << 7)));
      }
      break;
    case CUDA_R_8F_E4M3:  // exponent field below 8: finite, below 2
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(rng() & 0xBF);
      break;
    case CUDA_R_8F_E5M2:  // exponent field below 16: finite, below 2
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(rng() & 0xBF);
      break;
    default:  // integers: any byte
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(rng());
      break;
  }
}

// One device allocation, freed with the runner's cudaFree.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(const CudaApi& api) : api_(api) {}
  ~DeviceBuffer() {
    if (ptr_ != nullptr) api_.free(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  // Allocates `bytes` and copies the type's pattern over them.
  cudaError_t init(size_t bytes, cudaDataType type) {
    if (cudaError_t e = api_.malloc(&ptr_, bytes); e != cudaSuccess) return e;
    std::vector<unsigned char> chunk(std::min(bytes, kFillChunk));
    fill_pattern(type, &chunk);
    for (size_t off = 0; off < bytes; off += chunk.size()) {
      const size_t n = std::min(chunk.size(), bytes - off);
      if (cudaError_t e =
              api_.memcpy(static_cast<char*>(ptr_) + off, chunk.data(), n, cudaMemcpyHostToDevice);
          e != cudaSuccess) {
        return e;
      }
    }
    return cudaSuccess;
  }
  void* get() const { return ptr_; }

 private:
  const CudaApi& api_;
  void* ptr_ = nullptr;
};

// The cuBLASLt descriptors of one group, destroyed with it.
struct LtPlan {
  explicit LtPlan(const CudaApi& a) : api(a) {}
  ~LtPlan() {
    if (pref != nullptr) api.lt_pref_destroy(pref);
    for (cublasLtMatrixLayout_t l : {a_layout, b_layout, c_layout}) {
      if (l != nullptr) api.lt_layout_destroy(l);
    }
    if (desc != nullptr) api.lt_desc_destroy(desc);
  }
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  const CudaApi& api;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a_layout = nullptr, b_layout = nullptr, c_layout = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
};

std::string blas_error(const char* what, cublasStatus_t s) {
  return std::string(what) + " failed (cublasStatus_t " + std::to_string(static_cast<int>(s)) + ")";
}

// The scalars 1 and 0 in the scale type.
void scalars(cudaDataType scale, unsigned char* one, unsigned char* zero) {
  std::memset(one, 0, 8);
  std::memset(zero, 0, 8);
  if (scale == CUDA_R_32F) {
    const float v = 1.0f;
    std::memcpy(one, &v, 4);
  } else if (scale == CUDA_R_64F) {
    const double v = 1.0;
    std::memcpy(one, &v, 8);
  } else if (scale == CUDA_R_16F) {
    const uint16_t v = 0x3C00;
    std::memcpy(one, &v, 2);
  } else {
    const int32_t v = 1;
    std::memcpy(one, &v, 4);
  }
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

std::unique_ptr<GemmRunner> GemmRunner::create(const ReplayOptions& options, std::string* error) {
  std::unique_ptr<GemmRunner> r(new GemmRunner(options));
  CudaApi& a = r->api_;
  if (!load_cuda_api(options.lib_dir, &a, error)) return nullptr;
  auto cuda = [&](const char* what, cudaError_t e) {
    if (e == cudaSuccess) return true;
    *error = std::string(what) + ": " + a.error_string(e);
    return false;
  };
  if (!cuda("cudaSetDevice", a.set_device(options.device)) ||
      !cuda("cudaStreamCreate", a.stream_create(&r->stream_, cudaStreamNonBlocking)) ||
      !cuda("cudaMalloc (cuBLASLt workspace)", a.malloc(&r->workspace_, kWorkspaceBytes))) {
    return nullptr;
  }
  r->events_.resize(static_cast<size_t>(options.reps) + 1, nullptr);
  for (cudaEvent_t& e : r->events_) {
    if (!cuda("cudaEventCreate", a.event_create(&e))) return nullptr;
  }
  if (cublasStatus_t s = a.blas_create(&r->blas_); s != CUBLAS_STATUS_SUCCESS) {
    *error = blas_error("cublasCreate", s);
    return nullptr;
  }
  if (cublasStatus_t s = a.blas_set_stream(r->blas_, r->stream_); s != CUBLAS_STATUS_SUCCESS) {
    *error = blas_error("cublasSetStream", s);
    return nullptr;
  }
  if (cublasStatus_t s = a.lt_create(&r->lt_); s != CUBLAS_STATUS_SUCCESS) {
    *error = blas_error("cublasLtCreate", s);
    return nullptr;
  }
  return r;
}

GemmRunner::~GemmRunner() {
  if (stream_ != nullptr) api_.stream_sync(stream_);
  if (lt_ != nullptr) api_.lt_destroy(lt_);
  if (blas_ != nullptr) api_.blas_destroy(blas_);
  for (cudaEvent_t e : events_) {
    if (e != nullptr) api_.event_destroy(e);
  }
  if (workspace_ != nullptr) api_.free(workspace_);
  if (stream_ != nullptr) api_.stream_destroy(stream_);
}

ReplayResult GemmRunner::run(const GemmKey& key) {
  ReplayResult res;
  const auto api = static_cast<OpName>(key.api);
  if (key.m == 0 || key.n == 0 || key.k == 0) return (res.note = "shape not recorded"), res;
  if (key.m > INT_MAX || key.n > INT_MAX || key.k > INT_MAX || key.batch > INT_MAX) {
    return (res.note = "shape beyond cuBLAS's int arguments"), res;
  }
  Types t{};
  if (!types_of(key, &t, &res.note)) return res;
  // Transposes not recorded (a dump older than ring version 3): PyTorch's
  // usual ones, said in the note.
  int op_a = recorder::gemm_op_a(key.gemm_ops), op_b = recorder::gemm_op_b(key.gemm_ops);
  if (op_a < 0 || op_b < 0) {
    op_a = api == OpName::kLtMatmul ? CUBLAS_OP_T : CUBLAS_OP_N;
    op_b = CUBLAS_OP_N;
    res.note = std::string("transposes not recorded: replayed as ") + (op_a == 1 ? "T" : "N") + "N";
  }
  const auto ta = static_cast<cublasOperation_t>(op_a);
  const auto tb = static_cast<cublasOperation_t>(op_b);
  const int m = static_cast<int>(key.m), n = static_cast<int>(key.n), k = static_cast<int>(key.k);
  const int batch = key.batch > 0 ? static_cast<int>(key.batch) : 1;
  // Column-major with tight leading dimensions, as cuBLAS sees a contiguous
  // tensor: op(A) is m x k, op(B) k x n, C m x n.
  const int64_t rows_a = ta == CUBLAS_OP_N ? m : k, cols_a = ta == CUBLAS_OP_N ? k : m;
  const int64_t rows_b = tb == CUBLAS_OP_N ? k : n, cols_b = tb == CUBLAS_OP_N ? n : k;
  const int64_t stride_a = rows_a * cols_a, stride_b = rows_b * cols_b, stride_c = int64_t{m} * n;
  const double bytes = static_cast<double>(batch) * (static_cast<double>(stride_a) * t.a_bytes +
                                                     static_cast<double>(stride_b) * t.b_bytes +
                                                     static_cast<double>(stride_c) * t.c_bytes);
  if (bytes > options_.max_gib * (1ull << 30)) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "operands need %.1f GiB, more than --max-gib %g",
                  bytes / (1ull << 30), options_.max_gib);
    return (res.note = buf), res;
  }
  DeviceBuffer a_buf(api_), b_buf(api_), c_buf(api_);
  cudaError_t ce = a_buf.init(static_cast<size_t>(batch * stride_a) * t.a_bytes, t.a);
  if (ce == cudaSuccess) ce = b_buf.init(static_cast<size_t>(batch * stride_b) * t.b_bytes, t.b);
  if (ce == cudaSuccess) ce = c_buf.init(static_cast<size_t>(batch * stride_c) * t.c_bytes, t.c);
  if (ce != cudaSuccess) return (res.note = std::string("operands: ") + api_.error_string(ce)), res;
  unsigned char one[8], zero[8];
  scalars(t.scale, one, zero);
  void* A = a_buf.get();
  void* B = b_buf.get();
  void* C = c_buf.get();
  const int lda = static_cast<int>(rows_a), ldb = static_cast<int>(rows_b), ldc = m;

  LtPlan plan(api_);
  if (api == OpName::kLtMatmul) {
    cublasStatus_t s = api_.lt_desc_create(&plan.desc, t.compute, t.scale);
    const int32_t ta32 = ta, tb32 = tb;
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = api_.lt_desc_set(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta32, sizeof(ta32));
    }
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = api_.lt_desc_set(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb32, sizeof(tb32));
    }
    const int32_t batch32 = batch;
    auto layout = [&](cublasLtMatrixLayout_t* l, cudaDataType type, int64_t rows, int64_t cols,
                      int64_t stride) {
      if (s == CUBLAS_STATUS_SUCCESS) s = api_.lt_layout_create(l, type, rows, cols, rows);
      if (s == CUBLAS_STATUS_SUCCESS && batch > 1) {
        s = api_.lt_layout_set(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch32, sizeof(batch32));
        if (s == CUBLAS_STATUS_SUCCESS) {
          s = api_.lt_layout_set(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                 sizeof(stride));
        }
      }
    };
    layout(&plan.a_layout, t.a, rows_a, cols_a, stride_a);
    layout(&plan.b_layout, t.b, rows_b, cols_b, stride_b);
    layout(&plan.c_layout, t.c, m, n, stride_c);
    const uint64_t ws = kWorkspaceBytes;
    if (s == CUBLAS_STATUS_SUCCESS) s = api_.lt_pref_create(&plan.pref);
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = api_.lt_pref_set(plan.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    }
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = api_.lt_heuristic(lt_, plan.desc, plan.a_layout, plan.b_layout, plan.c_layout,
                            plan.c_layout, plan.pref, 1, &plan.heuristic, &found);
    }
    if (s != CUBLAS_STATUS_SUCCESS) return (res.note = blas_error("cuBLASLt setup", s)), res;
    if (found < 1) return (res.note = "cuBLASLt has no algorithm for it"), res;
  }

  const std::function<cublasStatus_t()> issue = [&]() -> cublasStatus_t {
    switch (api) {
      case OpName::kGemmEx:
        return api_.gemm_ex(blas_, ta, tb, m, n, k, one, A, t.a, lda, B, t.b, ldb, zero, C, t.c,
                            ldc, t.compute, CUBLAS_GEMM_DEFAULT);
      case OpName::kGemmStridedBatchedEx:
        return api_.gemm_sb_ex(blas_, ta, tb, m, n, k, one, A, t.a, lda, stride_a, B, t.b, ldb,
                               stride_b, zero, C, t.c, ldc, stride_c, batch, t.compute,
                               CUBLAS_GEMM_DEFAULT);
      case OpName::kSgemm:
        return api_.sgemm(blas_, ta, tb, m, n, k, reinterpret_cast<const float*>(one),
                          static_cast<const float*>(A), lda, static_cast<const float*>(B), ldb,
                          reinterpret_cast<const float*>(zero), static_cast<float*>(C), ldc);
      case OpName::kHgemm:
        return api_.hgemm(blas_, ta, tb, m, n, k, reinterpret_cast<const __half*>(one),
                          static_cast<const __half*>(A), lda, static_cast<const __half*>(B), ldb,
                          reinterpret_cast<const __half*>(zero), static_cast<__half*>(C), ldc);
      case OpName::kSgemmStridedBatched:
        return api_.sgemm_sb(blas_, ta, tb, m, n, k, reinterpret_cast<const float*>(one),
                             static_cast<const float*>(A), lda, stride_a,
                             static_cast<const float*>(B), ldb, stride_b,
                             reinterpret_cast<const float*>(zero), static_cast<float*>(C), ldc,
                             stride_c, batch);
      case OpName::kHgemmStridedBatched:
        return api_.hgemm_sb(blas_, ta, tb, m, n, k, reinterpret_cast<const __half*>(one),
                             static_cast<const __half*>(A), lda, stride_a,
                             static_cast<const __half*>(B), ldb, stride_b,
                             reinterpret_cast<const __half*>(zero), static_cast<__half*>(C), ldc,
                             stride_c, batch);
      case OpName::kLtMatmul:
        return api_.lt_matmul(lt_, plan.desc, one, A, plan.a_layout, B, plan.b_layout, zero, C,
                              plan.c_layout, C, plan.c_layout, &plan.heuristic.algo, workspace_,
                              kWorkspaceBytes, stream_);
      default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
  };

  for (int i = 0; i < options_.warmup || i == 0; ++i) {
    if (cublasStatus_t s = issue(); s != CUBLAS_STATUS_SUCCESS) {
      api_.stream_sync(stream_);
      res.note = blas_error(proto::op_name_str(api), s);
      return res;
    }
  }
  // Events between consecutive calls: the warm-up calls keep the stream busy
  // while these are issued, so each pair brackets exactly one call.
  ce = api_.event_record(events_[0], stream_);
  for (int i = 0; ce == cudaSuccess && i < options_.reps; ++i) {
    if (cublasStatus_t s = issue(); s != CUBLAS_STATUS_SUCCESS) {
      api_.stream_sync(stream_);
      return (res.note = blas_error(proto::op_name_str(api), s)), res;
    }
    ce = api_.event_record(events_[static_cast<size_t>(i) + 1], stream_);
  }
  if (ce == cudaSuccess) ce = api_.event_sync(events_.back());
  std::vector<double> ns;
  for (int i = 0; ce == cudaSuccess && i < options_.reps; ++i) {
    float ms = 0;
    ce = api_.elapsed(&ms, events_[static_cast<size_t>(i)], events_[static_cast<size_t>(i) + 1]);
    ns.push_back(static_cast<double>(ms) * 1e6);
  }
  if (ce != cudaSuccess) {
    api_.stream_sync(stream_);
    return (res.note = std::string("timing: ") + api_.error_string(ce)), res;
  }
  res.ok = true;
  res.ns_per_call = median(std::move(ns));
  return res;
}

}  // namespace xpu_timer::replay
