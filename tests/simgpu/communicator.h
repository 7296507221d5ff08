// Process-local side of a simulated NCCL communicator. The ncclComm handle
// is used by the host thread that issues operations (NCCL requires that
// callers serialise use of a communicator); CommState is shared with the
// stream tasks in flight, so destroying a comm with pending work is safe.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/simgpu/rendezvous.h"

namespace xpu_timer::simgpu {

struct CommState {
  std::unique_ptr<SharedSegment> segment;
  int rank = 0;
  int nranks = 1;
  uint64_t comm_hash = 0;
  std::atomic<bool> aborted{false};
  std::atomic<bool> left{false};

  SharedSegment& shm() { return *segment; }
  ~CommState();
};

// What the simulated time of an operation depends on.
enum class OpKind { kCollective, kSend, kRecv };

}  // namespace xpu_timer::simgpu

struct ncclComm {
  std::shared_ptr<xpu_timer::simgpu::CommState> state;
  int device = 0;
  uint64_t collective_seq = 0;     // collectives issued (host thread)
  uint64_t split_seq = 0;          // ncclCommSplit calls on this comm
  std::vector<uint64_t> recv_seq;  // receives issued, per peer
  std::string name;                // ncclConfig_t::commName, "" when none was given
};

namespace xpu_timer::simgpu {

// Joins rank `rank` of `nranks` to the communicator whose segment is derived
// from `comm_hash`; blocks until every rank joined unless `wait` is false.
ncclResult_t comm_init(ncclComm_t* out, int nranks, uint64_t comm_hash, int rank, bool wait);
// Waits until all ranks of `comm` joined (after comm_init with wait=false).
ncclResult_t comm_wait_joined(ncclComm_t comm);
ncclResult_t comm_split(ncclComm_t comm, int color, int key, ncclComm_t* out);
// Leaves the communicator; the last rank to leave unlinks the segment.
void comm_release(ncclComm_t comm, bool abort);

// Enqueues one operation on `stream` (caller validated arguments).
ncclResult_t enqueue_collective(ncclComm_t comm, uint64_t bytes, cudaStream_t stream);
ncclResult_t enqueue_send(ncclComm_t comm, int peer, uint64_t bytes, cudaStream_t stream);
ncclResult_t enqueue_recv(ncclComm_t comm, int peer, uint64_t bytes, cudaStream_t stream);

// latency (XPU_TIMER_SIM_LAT_US, default 20) + bytes / XPU_TIMER_SIM_BUS_GBPS (default 50).
uint64_t collective_duration_ns(uint64_t bytes);

void set_last_error(const std::string& message);
const char* last_error();

}  // namespace xpu_timer::simgpu
