// Finding the CommRegistry entry of a communicator passed to a collective;
// one we never saw created is registered on the spot (see comm_hash.h).
// Threads: any user thread.
#pragma once

#include <nccl.h>

#include <cstdint>

namespace xpu_timer::inject {

// CommRegistry::kNone when the registry is full or `comm` is null.
uint32_t comm_index_for(ncclComm_t comm);

// Whether an NCCL call's result means it went ahead (ncclInProgress: a
// non-blocking communicator's call that completes later).
inline bool nccl_launched(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

}  // namespace xpu_timer::inject
