// The simulated libcublasLt.so.13. Descriptors are "semi-opaque" structs the
// caller may own (cublasLt*Init), so their state lives inside the opaque
// storage (static_asserts below), never on the heap. cublasLtMatmul takes
// m and n from D's layout, k from A's layout and TRANSA, batch from D's
// BATCH_COUNT, and puts one simulated kernel on the given stream.
#include <cublasLt.h>
#include <string.h>

#include <cstdint>
#include <new>

#include "tests/simgpu/gemm_time.h"
#include "tests/simgpu/sim_ext.h"

struct cublasLtContext {
  int unused = 0;
};

namespace {

constexpr uint32_t kLayoutMagic = 0x4c41594fu;  // "LAYO"
constexpr uint32_t kDescMagic = 0x44455343u;    // "DESC"
constexpr uint32_t kPrefMagic = 0x50524546u;    // "PREF"

struct LayoutState {
  uint32_t magic;
  uint32_t type;
  int32_t order;
  int32_t batch_count;
  uint64_t rows;
  uint64_t cols;
  int64_t ld;
  int64_t strided_batch_offset;
  int64_t plane_offset;
  int32_t batch_mode;
};
static_assert(sizeof(LayoutState) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout state size");

// Attributes of a matmul descriptor or preference: values of at most 8 bytes
// (enums, scalars, pointers), kept as (attribute, size, value) slots.
template <int kSlots>
struct AttrStore {
  uint32_t magic;
  uint32_t used;
  struct Slot {
    uint32_t attr;
    uint32_t size;
    uint64_t value;
  } slots[kSlots];

  bool set(uint32_t attr, const void* buf, size_t size) {
    if (buf == nullptr || size == 0 || size > 8) return false;
    Slot* slot = find(attr);
    if (slot == nullptr) {
      if (used == kSlots) return true;  // full: accept and ignore (timing does not need it)
      slot = &slots[used++];
      slot->attr = attr;
    }
    slot->size = static_cast<uint32_t>(size);
    slot->value = 0;
    memcpy(&slot->value, buf, size);
    return true;
  }
  // Unset attributes read as zero (the documented default of the ones we use).
  bool get(uint32_t attr, void* buf, size_t size, size_t* written) {
    const Slot* slot = find(attr);
    const size_t need = slot != nullptr ? slot->size : (size != 0 && size <= 8 ? size : 4);
    if (size == 0) {
      if (written == nullptr) return false;
      *written = need;
      return true;
    }
    if (buf == nullptr || size < need) return false;
    uint64_t value = slot != nullptr ? slot->value : 0;
    memcpy(buf, &value, need);
    if (written != nullptr) *written = need;
    return true;
  }
  Slot* find(uint32_t attr) {
    for (uint32_t i = 0; i < used && i < kSlots; ++i) {
      if (slots[i].attr == attr) return &slots[i];
    }
    return nullptr;
  }
};
using DescState = AttrStore<15>;
using PrefState = AttrStore<3>;
static_assert(sizeof(DescState) <= sizeof(cublasLtMatmulDescOpaque_t), "desc state size");
static_assert(sizeof(PrefState) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "pref state size");

LayoutState* layout(cublasLtMatrixLayout_t l) {
  auto* s = reinterpret_cast<LayoutState*>(l);
  return s != nullptr && s->magic == kLayoutMagic ? s : nullptr;
}
DescState* desc(cublasLtMatmulDesc_t d) {
  auto* s = reinterpret_cast<DescState*>(d);
  return s != nullptr && s->magic == kDescMagic ? s : nullptr;
}
PrefState* pref(cublasLtMatmulPreference_t p) {
  auto* s = reinterpret_cast<PrefState*>(p);
  return s != nullptr && s->magic == kPrefMagic ? s : nullptr;
}

void init_layout(cublasLtMatrixLayout_t l, cudaDataType type, uint64_t rows, uint64_t cols,
                 int64_t ld) {
  memset(l, 0, sizeof(*l));
  auto* s = reinterpret_cast<LayoutState*>(l);
  s->magic = kLayoutMagic;
  s->type = static_cast<uint32_t>(type);
  s->order = CUBLASLT_ORDER_COL;
  s->batch_count = 1;
  s->rows = rows;
  s->cols = cols;
  s->ld = ld;
}

void init_desc(cublasLtMatmulDesc_t d, cublasComputeType_t compute, cudaDataType_t scale) {
  memset(d, 0, sizeof(*d));
  auto* s = reinterpret_cast<DescState*>(d);
  s->magic = kDescMagic;
  const int32_t c = compute;
  const int32_t sc = scale;
  s->set(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &c, sizeof(c));
  s->set(CUBLASLT_MATMUL_DESC_SCALE_TYPE, &sc, sizeof(sc));
}

void init_pref(cublasLtMatmulPreference_t p) {
  memset(p, 0, sizeof(*p));
  reinterpret_cast<PrefState*>(p)->magic = kPrefMagic;
}

// Field of a layout attribute and its exact size as cublasLt documents it.
void* layout_field(LayoutState* s, cublasLtMatrixLayoutAttribute_t attr, size_t* size) {
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
      *size = 4;
      return &s->type;
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
      *size = 4;
      return &s->order;
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
      *size = 8;
      return &s->rows;
    case CUBLASLT_MATRIX_LAYOUT_COLS:
      *size = 8;
      return &s->cols;
    case CUBLASLT_MATRIX_LAYOUT_LD:
      *size = 8;
      return &s->ld;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      *size = 4;
      return &s->batch_count;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      *size = 8;
      return &s->strided_batch_offset;
    case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET:
      *size = 8;
      return &s->plane_offset;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_MODE:
      *size = 4;
      return &s->batch_mode;
    default:
      return nullptr;
  }
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new (std::nothrow) cublasLtContext();
  return *handle != nullptr ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) {
  XPU_SIM_ENTRY();
  return CUBLAS_VERSION;
}

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t l, size_t size,
                                                 cudaDataType type, uint64_t rows, uint64_t cols,
                                                 int64_t ld) {
  XPU_SIM_ENTRY();
  if (l == nullptr || size < sizeof(*l)) return CUBLAS_STATUS_INVALID_VALUE;
  init_layout(l, type, rows, cols, ld);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  XPU_SIM_ENTRY();
  if (l == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *l = new (std::nothrow) cublasLtMatrixLayoutOpaque_t;
  if (*l == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  init_layout(*l, type, rows, cols, ld);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  XPU_SIM_ENTRY();
  delete l;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t size) {
  XPU_SIM_ENTRY();
  LayoutState* s = layout(l);
  size_t need = 0;
  void* field = s != nullptr ? layout_field(s, attr, &need) : nullptr;
  if (field == nullptr || buf == nullptr || size != need) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(field, buf, need);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr, void* buf,
                                                size_t size, size_t* written) {
  XPU_SIM_ENTRY();
  xpu_sim_count_call(XPU_SIM_LT_LAYOUT_GET);
  LayoutState* s = layout(l);
  size_t need = 0;
  void* field = s != nullptr ? layout_field(s, attr, &need) : nullptr;
  if (field == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0 && written != nullptr) {
    *written = need;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == nullptr || size < need) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, field, need);
  if (written != nullptr) *written = need;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t d, size_t size,
                                               cublasComputeType_t compute, cudaDataType_t scale) {
  XPU_SIM_ENTRY();
  if (d == nullptr || size < sizeof(*d)) return CUBLAS_STATUS_INVALID_VALUE;
  init_desc(d, compute, scale);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  XPU_SIM_ENTRY();
  if (d == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *d = new (std::nothrow) cublasLtMatmulDescOpaque_t;
  if (*d == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  init_desc(*d, compute, scale);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  XPU_SIM_ENTRY();
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t size) {
  XPU_SIM_ENTRY();
  DescState* s = desc(d);
  if (s == nullptr || !s->set(attr, buf, size)) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr, void* buf,
                                              size_t size, size_t* written) {
  XPU_SIM_ENTRY();
  xpu_sim_count_call(XPU_SIM_LT_DESC_GET);
  DescState* s = desc(d);
  if (s == nullptr || !s->get(attr, buf, size, written)) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t p, size_t size) {
  XPU_SIM_ENTRY();
  if (p == nullptr || size < sizeof(*p)) return CUBLAS_STATUS_INVALID_VALUE;
  init_pref(p);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  XPU_SIM_ENTRY();
  if (p == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *p = new (std::nothrow) cublasLtMatmulPreferenceOpaque_t;
  if (*p == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  init_pref(*p);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  XPU_SIM_ENTRY();
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t size) {
  XPU_SIM_ENTRY();
  PrefState* s = pref(p);
  if (s == nullptr || !s->set(attr, buf, size)) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    void* buf, size_t size, size_t* written) {
  XPU_SIM_ENTRY();
  PrefState* s = pref(p);
  if (s == nullptr || !s->get(attr, buf, size, written)) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle,
                                              cublasLtMatmulDesc_t operation,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned) {
  XPU_SIM_ENTRY();
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (desc(operation) == nullptr || layout(a) == nullptr || layout(b) == nullptr ||
      layout(c) == nullptr || layout(d) == nullptr || pref(preference) == nullptr ||
      requested <= 0 || results == nullptr || returned == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  memset(&results[0], 0, sizeof(results[0]));
  results[0].algo.data[0] = 1;  // the sim has one algorithm
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t compute_desc,
                              const void* alpha, const void* A, cublasLtMatrixLayout_t a_desc,
                              const void* B, cublasLtMatrixLayout_t b_desc, const void* beta,
                              const void* C, cublasLtMatrixLayout_t c_desc, void* D,
                              cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  (void)alpha, (void)A, (void)B, (void)beta, (void)C, (void)D, (void)algo, (void)workspace;
  (void)workspace_bytes;
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  DescState* op = desc(compute_desc);
  LayoutState* la = layout(a_desc);
  LayoutState* lb = layout(b_desc);
  LayoutState* lc = layout(c_desc);
  LayoutState* ld = layout(d_desc);
  if (op == nullptr || la == nullptr || lb == nullptr || lc == nullptr || ld == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  int32_t transa = CUBLAS_OP_N;
  size_t written = 0;
  op->get(CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa), &written);
  const uint64_t m = ld->rows;
  const uint64_t n = ld->cols;
  const uint64_t k = transa == CUBLAS_OP_N ? la->cols : la->rows;
  const int64_t batch = ld->batch_count > 0 ? ld->batch_count : 1;
  const uint64_t ns = xpu_timer::simgpu::gemm_duration_ns(
      static_cast<int64_t>(m), static_cast<int64_t>(n), static_cast<int64_t>(k), batch);
  if (xpu_sim_launch_kernel(stream, ns) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
