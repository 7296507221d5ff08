// The POD a hook publishes for every timed call, and what the Poller needs to
// finish it. Written by a user thread into a reserved queue cell, read once by
// the Poller. Trivially copyable; no pointers the Poller dereferences except
// the stream handle, which it only uses as a FIFO key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

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
  // Only the head was written (below): every field after it has its
  // default, and `count` is `bytes` when kCountIsBytes is set, else 0.
  static constexpr uint8_t kHeadOnly = 8;
  static constexpr uint8_t kCountIsBytes = 16;

  // The head: all that a sampled-out GEMM or copy carries (the most
  // frequent record by far). With the queue cell's sequence number it fills
  // exactly one cache line of the cell (inject/bounded_queue.h), so such a
  // record costs the hook and the Poller one line each instead of four.
  uint8_t valid;     // 0: the hook reserved the cell but could not time the call
  uint8_t kind;      // proto::OpKind
  uint16_t name;     // proto::OpName
  uint8_t dtype;     // proto::DType
  uint8_t nmarks;    // used entries of marks[]
  uint8_t flags;     // kHasPair: pair_index names a pair the Poller must give back
  uint8_t gemm_ops;  // GEMM: recorder::gemm_ops_of(transa, transb)
  uint64_t launch_ns;       // CLOCK_MONOTONIC at the host call
  uint64_t bytes;           // NCCL payload bytes, copy bytes
  uint64_t flops;           // GEMM floating point operations
  uint32_t m, n, k, batch;  // GEMM shape, 0 = unknown
  uintptr_t stream;         // cudaStream_t, a FIFO key only
  // The tail (defaults in parentheses).
  int32_t device;       // CUDA device of the stream and of the event pair (-1: current)
  uint32_t pair_index;  // EventPool index of the start/end event pair (0)
  uint32_t group_size;  // members of a kGroup (or of a same-op group), else 1
  uint32_t nranks;      // NCCL: communicator size; GEMM: 0
  uint64_t comm_hash;   // NCCL: hash of the (last member's) communicator (0)
  uint64_t seq;         // NCCL: per-communicator sequence number (1-based) (0)
  uint64_t count;       // NCCL: element count as passed; copies: bytes (0)
  int32_t peer;         // NCCL: root or peer, -1 otherwise
  uint8_t red_op;       // NCCL: ncclRedOp_t + 1, 0 = none
  uint8_t reserved2[3];
  CommMark marks[kMaxCommMarks];
};


// The head's size: with the 8-byte sequence number before it, one 64-byte line.
constexpr size_t kOpRecordHeadBytes = offsetof(OpRecord, device);
static_assert(kOpRecordHeadBytes == 56, "the head and a queue cell's sequence number fill one line");

// Whether a record with these tail fields can travel as its head alone.
inline bool tail_is_default(int32_t device, uint32_t group_size, uint64_t count, uint64_t bytes,
                            int32_t peer, uint8_t red_op) {
  return device == -1 && group_size == 1 && (count == 0 || count == bytes) && peer == -1 &&
         red_op == 0;
}

// The Poller's copy of a record out of its queue cell: a head-only record
// reads one line and gets the tail's defaults.
inline void read_record(const OpRecord& in, OpRecord* out) {
  std::memcpy(static_cast<void*>(out), &in, kOpRecordHeadBytes);
  if (!(out->flags & OpRecord::kHeadOnly)) {
    std::memcpy(reinterpret_cast<char*>(out) + kOpRecordHeadBytes,
                reinterpret_cast<const char*>(&in) + kOpRecordHeadBytes,
                sizeof(OpRecord) - kOpRecordHeadBytes);
    return;
  }
  out->device = -1;
  out->pair_index = 0;
  out->group_size = 1;
  out->nranks = 0;
  out->comm_hash = 0;
  out->seq = 0;
  out->count = (out->flags & OpRecord::kCountIsBytes) ? out->bytes : 0;
  out->peer = -1;
  out->red_op = 0;
  std::memset(out->reserved2, 0, sizeof(out->reserved2));
  std::memset(static_cast<void*>(out->marks), 0, sizeof(out->marks));
}

}  // namespace xpu_timer::inject
