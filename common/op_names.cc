#include "common/op_names.h"

namespace xpu_timer::proto {

const char* op_name_str(OpName name) {
  switch (name) {
    case OpName::kUnknown:
      return "Unknown";
    case OpName::kGemmEx:
      return "GemmEx";
    case OpName::kGemmStridedBatchedEx:
      return "GemmStridedBatchedEx";
    case OpName::kSgemm:
      return "Sgemm";
    case OpName::kHgemm:
      return "Hgemm";
    case OpName::kSgemmStridedBatched:
      return "SgemmStridedBatched";
    case OpName::kHgemmStridedBatched:
      return "HgemmStridedBatched";
    case OpName::kLtMatmul:
      return "LtMatmul";
    case OpName::kAllReduce:
      return "AllReduce";
    case OpName::kAllGather:
      return "AllGather";
    case OpName::kReduceScatter:
      return "ReduceScatter";
    case OpName::kBroadcast:
      return "Broadcast";
    case OpName::kReduce:
      return "Reduce";
    case OpName::kSend:
      return "Send";
    case OpName::kRecv:
      return "Recv";
    case OpName::kGroup:
      return "Group";
    case OpName::kMemcpyH2D:
      return "MemcpyH2D";
    case OpName::kMemcpyD2H:
      return "MemcpyD2H";
    case OpName::kMemcpyD2D:
      return "MemcpyD2D";
    case OpName::kMemcpyOther:
      return "MemcpyOther";
    case OpName::kMemcpyPeer:
      return "MemcpyPeer";
    case OpName::kNvtxRange:
      return "NvtxRange";
    case OpName::kStep:
      return "Step";
    case OpName::kGcPause:
      return "GcPause";
    case OpName::kLoaderWait:
      return "DataLoaderWait";
    case OpName::kDeviceMalloc:
      return "cudaMalloc";
    case OpName::kDeviceFree:
      return "cudaFree";
    case OpName::kKernelLaunches:
      return "KernelLaunches";
    case OpName::kPythonCall:
      return "PythonCall";
  }
  return "Unknown";
}

OpKind op_kind_of(OpName name) {
  const auto v = static_cast<uint16_t>(name);
  if (v >= 1 && v < 32) return OpKind::kGemm;
  if (v >= 32 && v < 64) return OpKind::kNccl;
  if (v >= 64 && v < 96) return OpKind::kMemcpy;
  if (v >= 96 && v < 128) return OpKind::kRange;
  return OpKind::kNone;
}

const char* op_kind_str(uint8_t kind) {
  switch (static_cast<OpKind>(kind)) {
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kNccl:
      return "nccl";
    case OpKind::kMemcpy:
      return "memcpy";
    case OpKind::kRange:
      return "range";
    case OpKind::kNone:
      return "none";
  }
  return "none";
}

double nccl_bus_factor(OpName op, uint32_t nranks) {
  if (nranks == 0) return 1.0;  // communicator size unknown
  const double n = static_cast<double>(nranks);
  switch (op) {
    case OpName::kAllReduce:
      return 2.0 * (n - 1) / n;
    case OpName::kAllGather:
    case OpName::kReduceScatter:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

const char* red_op_str(uint8_t red_op) {
  switch (red_op) {
    case 1:
      return "sum";
    case 2:
      return "prod";
    case 3:
      return "max";
    case 4:
      return "min";
    case 5:
      return "avg";
    default:
      return "";
  }
}

const char* dtype_str(DType t) {
  switch (t) {
    case DType::kUnknown:
      return "unknown";
    case DType::kF32:
      return "fp32";
    case DType::kF16:
      return "fp16";
    case DType::kBF16:
      return "bf16";
    case DType::kF64:
      return "fp64";
    case DType::kF8E4M3:
      return "fp8_e4m3";
    case DType::kF8E5M2:
      return "fp8_e5m2";
    case DType::kI8:
      return "int8";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kU8:
      return "uint8";
    case DType::kTF32:
      return "tf32";
  }
  return "unknown";
}

}  // namespace xpu_timer::proto
