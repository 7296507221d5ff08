// What an operation is, as numbers and as names: the operation (OpName) and
// its kind (OpKind), data types (DType), NCCL reductions, and the NCCL
// algorithm / protocol / transport. The numbers are recorded in the status
// page (common/status_page_layout.h) and in the flight-recorder ring
// (common/recorder_ring.h); the functions give the names users see in
// metrics, traces and verdicts.
//
// Versioning: these values are part of both layouts but carry no version of
// their own: they are append-only (never renumber or reuse a value), so a
// reader of either layout meets at worst a value it does not name, which it
// treats as unknown. Adding a value bumps neither kStatusPageVersion nor
// kRingVersion.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xpu_timer::proto {

// kRange: a host-side region of the program (an NVTX range, a training step,
// a garbage collection, a DataLoader wait, a synchronous allocation), timed on
// the CPU; never in flight on a GPU.
enum class OpKind : uint8_t { kNone = 0, kGemm = 1, kNccl = 2, kMemcpy = 3, kRange = 4 };

// What was called. Values are recorded in the page and the ring: append only.
enum class OpName : uint16_t {
  kUnknown = 0,
  // cuBLAS / cuBLASLt
  kGemmEx = 1,
  kGemmStridedBatchedEx = 2,
  kSgemm = 3,
  kHgemm = 4,
  kSgemmStridedBatched = 5,
  kHgemmStridedBatched = 6,
  kLtMatmul = 7,
  // NCCL
  kAllReduce = 32,
  kAllGather = 33,
  kReduceScatter = 34,
  kBroadcast = 35,
  kReduce = 36,
  kSend = 37,
  kRecv = 38,
  kGroup = 39,  // a ncclGroupStart/End block, timed as one operation
  // memory copies
  kMemcpyH2D = 64,
  kMemcpyD2H = 65,
  kMemcpyD2D = 66,
  kMemcpyOther = 67,  // host to host, or a direction the runtime could not tell us
  kMemcpyPeer = 68,   // cudaMemcpyPeer / cudaMemcpyPeerAsync: between two devices
  // host-side regions (OpKind::kRange)
  kNvtxRange = 96,        // a push/pop or start/end range of the program's NVTX calls
  kStep = 97,             // one training iteration (docs/architecture.md "NVTX ranges and steps")
  kGcPause = 98,          // a Python garbage collection (the interpreter's threads wait)
  kLoaderWait = 99,       // the training loop waiting in its DataLoader's __next__
  kDeviceMalloc = 100,    // a synchronous cudaMalloc (it waits for the device)
  kDeviceFree = 101,      // a synchronous cudaFree
  kKernelLaunches = 102,  // kernels launched through the runtime over an interval (a sample)
  kPythonCall = 103,      // a call of a traced Python function (inject/python_tracer.h)
};

// Name as shown to users ("AllReduce", "GemmEx", ...). Never null.
const char* op_name_str(OpName name);
OpKind op_kind_of(OpName name);
// "gemm", "nccl", "memcpy", "range", "none": the kind as metrics and traces name it.
const char* op_kind_str(uint8_t kind);
// nccl-tests' bus-bandwidth factor for `bytes` as our hooks define them (the
// larger of the send and receive buffer, nccl-tests' "size"): AllReduce
// 2(n-1)/n, AllGather and ReduceScatter (n-1)/n, others 1; nranks 0
// (communicator size unknown) gives 1.
double nccl_bus_factor(OpName op, uint32_t nranks);

// Data types, independent of the CUDA enum values so the page stays stable.
enum class DType : uint8_t {
  kUnknown = 0,
  kF32,
  kF16,
  kBF16,
  kF64,
  kF8E4M3,
  kF8E5M2,
  kI8,
  kI32,
  kI64,
  kU8,
  kTF32,
};
const char* dtype_str(DType t);
// A recorded NCCL reduction (ncclRedOp_t + 1): "sum", "prod", "max", "min",
// "avg"; "" for none or unknown.
const char* red_op_str(uint8_t red_op);

// NCCL algorithm / protocol / transport of a collective, as NCCL's profiler
// plugin interface names them (inject/nccl_profiler_plugin.cc). Small closed
// sets so that metric labels stay bounded; kMixed: a group whose members ran
// with different ones. Values are recorded in the page and the ring: append only.
enum class NcclAlgo : uint8_t {
  kUnknown = 0,
  kTree,
  kRing,
  kCollNetDirect,
  kCollNetChain,
  kNvls,
  kNvlsTree,
  kPat,
  kOther,
  kMixed,
};
enum class NcclProto : uint8_t { kUnknown = 0, kLL, kLL128, kSimple, kOther, kMixed };
enum class NcclTransport : uint8_t { kUnknown = 0, kIntraNode, kInterNode };

inline const char* nccl_algo_str(uint8_t a) {
  static constexpr const char* kNames[] = {"unknown",      "Tree", "Ring",     "CollNetDirect",
                                           "CollNetChain", "NVLS", "NVLSTree", "PAT",
                                           "other",        "mixed"};
  return a < sizeof(kNames) / sizeof(kNames[0]) ? kNames[a] : "unknown";
}
inline const char* nccl_proto_str(uint8_t p) {
  static constexpr const char* kNames[] = {"unknown", "LL", "LL128", "Simple", "other", "mixed"};
  return p < sizeof(kNames) / sizeof(kNames[0]) ? kNames[p] : "unknown";
}
inline const char* nccl_transport_str(uint8_t t) {
  return t == 1 ? "intra_node" : t == 2 ? "inter_node" : "unknown";
}

}  // namespace xpu_timer::proto
