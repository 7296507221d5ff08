// Per-thread bookkeeping of ncclGroupStart/ncclGroupEnd (NCCL groups are
// per thread and nest). Members issued inside a group are not timed one by
// one: they are accumulated here and the whole group is timed around the
// outermost ncclGroupEnd, on the stream of its first member.
//
// Threads: each user thread has its own accumulator (thread_local,
// initial-exec TLS: no allocation, no lock).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/op_names.h"
#include "inject/timed_call.h"

namespace xpu_timer::inject {

struct GroupMember {
  proto::OpName name;
  proto::DType dtype;
  uint64_t bytes;
  uint32_t comm_index;  // CommRegistry::kNone when not tracked
  int device;
  cudaStream_t stream;
};

int nccl_group_depth();
void nccl_group_enter();
// Undoes nccl_group_enter() when the real ncclGroupStart failed.
void nccl_group_cancel_enter();
// True when this ends the outermost group (the caller then times it).
// An unbalanced call (depth already 0) returns false.
bool nccl_group_leave();
void nccl_group_add(const GroupMember& m);
// Moves the accumulated group into *desc / *stream and resets the
// accumulator. False when the group had no members. *untracked counts
// members whose communicator did not fit in kMaxCommMarks distinct ones.
bool nccl_group_take(OpDesc* desc, cudaStream_t* stream, uint32_t* untracked);

}  // namespace xpu_timer::inject
