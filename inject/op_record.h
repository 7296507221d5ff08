// The POD a hook publishes for every timed call, and what the Poller needs to
// finish it. Written by a user thread into a reserved queue cell, read once by
// the Poller. Trivially copyable; no pointers the Poller dereferences except
// the stream handle, which it only uses as a FIFO key.
#pragma once

#include <cstdint>

namespace xpu_timer::inject {

// A communicator a timed operation advanced: for a group, one per distinct
// communicator among its members, with the seq of that comm's last member.
struct CommMark {
  uint32_t comm_index;  // CommRegistry index
  uint32_t reserved;
  uint64_t seq;
};
constexpr int kMaxCommMarks = 8;

struct OpRecord {
  static constexpr uint8_t kHasPair = 1;
  // Sampled out (inject/sample_gate.h): kUntimed: no events at all, complete
  // when drained (GEMMs); kEndOnly: not timed, its start and end events are
  // only markers for hang detection (collectives): when it could start and
  // that it completed. The name keeps the recorder's kRecEndOnly: no GPU time.
  static constexpr uint8_t kUntimed = 2;
  static constexpr uint8_t kEndOnly = 4;

  uint8_t valid;        // 0: the hook reserved the cell but could not time the call
  uint8_t kind;         // proto::OpKind
  uint16_t name;        // proto::OpName
  uint8_t dtype;        // proto::DType
  uint8_t nmarks;       // used entries of marks[]
  uint8_t flags;        // kHasPair: pair_index names a pair the Poller must give back
  uint8_t gemm_ops;     // GEMM: recorder::gemm_ops_of(transa, transb)
  int32_t device;       // CUDA device of the stream and of the event pair
  uint32_t pair_index;  // EventPool index of the start/end event pair
  uint32_t group_size;  // members of a kGroup (or of a same-op group), else 1
  uint32_t nranks;      // NCCL: communicator size; GEMM: 0
  uint64_t comm_hash;   // NCCL: hash of the (last member's) communicator
  uint64_t seq;         // NCCL: per-communicator sequence number (1-based)
  uint64_t launch_ns;   // CLOCK_MONOTONIC at the host call
  uint64_t bytes;       // NCCL payload bytes
  uint64_t flops;       // GEMM floating point operations
  uint64_t count;       // NCCL: element count as passed
  int32_t peer;         // NCCL: root or peer, -1 otherwise
  uint8_t red_op;       // NCCL: ncclRedOp_t + 1, 0 = none
  uint8_t reserved2[3];
  uint32_t m, n, k, batch;  // GEMM shape, 0 = unknown
  uintptr_t stream;         // cudaStream_t, a FIFO key only
  CommMark marks[kMaxCommMarks];
};

}  // namespace xpu_timer::inject
