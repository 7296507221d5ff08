#include "common/protocol.h"

#include <cstring>

namespace xpu_timer::proto {

// 10 us * 2^i for i = 0..22, then +Inf: covers a tiny kernel to a 40 s collective.
const double kHistUpperBoundsSeconds[kHistBuckets] = {
    10e-6,     20e-6,     40e-6,     80e-6,    160e-6,   320e-6,   640e-6,   1.28e-3,
    2.56e-3,   5.12e-3,   10.24e-3,  20.48e-3, 40.96e-3, 81.92e-3, 163.84e-3, 327.68e-3,
    655.36e-3, 1.31072,   2.62144,   5.24288,  10.48576, 20.97152, 41.94304, 1e300};

int hist_bucket_for_ns(uint64_t ns) {
  uint64_t bound_ns = 10000;  // 10 us
  for (int i = 0; i < kHistBuckets - 1; ++i, bound_ns *= 2) {
    if (ns <= bound_ns) return i;
  }
  return kHistBuckets - 1;
}

const char* op_name_str(OpName name) {
  switch (name) {
    case OpName::kUnknown: return "Unknown";
    case OpName::kGemmEx: return "GemmEx";
    case OpName::kGemmStridedBatchedEx: return "GemmStridedBatchedEx";
    case OpName::kSgemm: return "Sgemm";
    case OpName::kHgemm: return "Hgemm";
    case OpName::kSgemmStridedBatched: return "SgemmStridedBatched";
    case OpName::kHgemmStridedBatched: return "HgemmStridedBatched";
    case OpName::kLtMatmul: return "LtMatmul";
    case OpName::kAllReduce: return "AllReduce";
    case OpName::kAllGather: return "AllGather";
    case OpName::kReduceScatter: return "ReduceScatter";
    case OpName::kBroadcast: return "Broadcast";
    case OpName::kReduce: return "Reduce";
    case OpName::kSend: return "Send";
    case OpName::kRecv: return "Recv";
    case OpName::kGroup: return "Group";
    case OpName::kMemcpyH2D: return "MemcpyH2D";
    case OpName::kMemcpyD2H: return "MemcpyD2H";
    case OpName::kMemcpyD2D: return "MemcpyD2D";
    case OpName::kMemcpyOther: return "MemcpyOther";
  }
  return "Unknown";
}

OpKind op_kind_of(OpName name) {
  const auto v = static_cast<uint16_t>(name);
  if (v >= 1 && v < 32) return OpKind::kGemm;
  if (v >= 32 && v < 64) return OpKind::kNccl;
  if (v >= 64 && v < 96) return OpKind::kMemcpy;
  return OpKind::kNone;
}

const char* dtype_str(DType t) {
  switch (t) {
    case DType::kUnknown: return "unknown";
    case DType::kF32: return "fp32";
    case DType::kF16: return "fp16";
    case DType::kBF16: return "bf16";
    case DType::kF64: return "fp64";
    case DType::kF8E4M3: return "fp8_e4m3";
    case DType::kF8E5M2: return "fp8_e5m2";
    case DType::kI8: return "int8";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kU8: return "uint8";
    case DType::kTF32: return "tf32";
  }
  return "unknown";
}

bool read_status_page(const StatusPage* page, StatusPage* out, int attempts) {
  for (int i = 0; i < attempts; ++i) {
    const uint64_t before = page->seq.load(std::memory_order_acquire);
    if (before & 1) continue;
    std::memcpy(static_cast<void*>(out), static_cast<const void*>(page), sizeof(StatusPage));
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t after = page->seq.load(std::memory_order_relaxed);
    if (before == after) return true;
  }
  return false;
}

}  // namespace xpu_timer::proto
