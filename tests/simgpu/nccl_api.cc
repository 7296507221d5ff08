// The simulated libnccl.so.2: communicator management and the operations,
// each validated as NCCL does and turned into one stream task (see
// communicator.h). Bytes that set an operation's simulated time: the send
// buffer for AllReduce/Broadcast/Reduce/Send/Recv, the full (gathered or
// to-be-scattered) buffer for AllGather and ReduceScatter.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <sys/random.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

#include "tests/simgpu/communicator.h"
#include "tests/simgpu/nccl_group.h"
#include "tests/simgpu/rendezvous.h"
#include "tests/simgpu/sim_ext.h"

namespace sim = xpu_timer::simgpu;

namespace {

size_t type_size(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

uint64_t id_hash(const ncclUniqueId& id) {
  return sim::hash_bytes(id.internal, sizeof(id.internal), 0);
}

// The commName of a caller's config, read as NCCL >= 2.27 does: only where
// the caller's struct (built against its own nccl.h) has the field.
std::string config_name(const ncclConfig_t* config) {
  constexpr size_t kEnd = offsetof(ncclConfig_t, commName) + sizeof(config->commName);
  if (config == nullptr || config->size < kEnd ||
      config->version < static_cast<unsigned int>(NCCL_VERSION(2, 27, 0)) ||
      config->commName == nullptr) {
    return "";
  }
  return config->commName;
}

// Names a communicator just created (NCCL keeps the name in comm->config).
ncclResult_t named(ncclResult_t res, ncclComm_t* comm, const ncclConfig_t* config) {
  if (res == ncclSuccess && comm != nullptr && *comm != nullptr) {
    (*comm)->name = config_name(config);
  }
  return res;
}

ncclResult_t check_comm(ncclComm_t comm) {
  if (comm == nullptr || !comm->state) {
    sim::set_last_error("invalid communicator (NULL)");
    return ncclInvalidArgument;
  }
  if (comm->state->aborted.load()) {
    sim::set_last_error("communicator was aborted");
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

ncclResult_t collective(ncclComm_t comm, size_t count, ncclDataType_t type, size_t multiplier,
                        cudaStream_t stream) {
  if (ncclResult_t res = check_comm(comm); res != ncclSuccess) return res;
  const size_t elem = type_size(type);
  if (elem == 0) {
    sim::set_last_error("invalid data type");
    return ncclInvalidArgument;
  }
  const uint64_t bytes = static_cast<uint64_t>(count) * elem * multiplier;
  return sim::submit_op(false, [=] { return sim::enqueue_collective(comm, bytes, stream); });
}

ncclResult_t check_root(ncclComm_t comm, int root) {
  if (root < 0 || root >= comm->state->nranks) {
    sim::set_last_error("invalid root rank");
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t point_to_point(bool is_send, size_t count, ncclDataType_t type, int peer,
                            ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t res = check_comm(comm); res != ncclSuccess) return res;
  const size_t elem = type_size(type);
  if (elem == 0 || peer < 0 || peer >= comm->state->nranks) {
    sim::set_last_error("invalid data type or peer");
    return ncclInvalidArgument;
  }
  const uint64_t bytes = static_cast<uint64_t>(count) * elem;
  if (is_send) {
    return sim::submit_op(true, [=] { return sim::enqueue_send(comm, peer, bytes, stream); });
  }
  return sim::submit_op(false, [=] { return sim::enqueue_recv(comm, peer, bytes, stream); });
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  XPU_SIM_ENTRY();
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  XPU_SIM_ENTRY();
  if (id == nullptr) return ncclInvalidArgument;
  size_t filled = 0;
  while (filled < sizeof(id->internal)) {
    const ssize_t n = getrandom(id->internal + filled, sizeof(id->internal) - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      sim::set_last_error(std::string("getrandom: ") + strerror(errno));
      return ncclSystemError;
    }
    filled += static_cast<size_t>(n);
  }
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  XPU_SIM_ENTRY();
  return sim::comm_init(comm, nranks, id_hash(id), rank, /*wait=*/true);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  XPU_SIM_ENTRY();
  // Blocking mode only: a nonblocking config still initialises synchronously.
  return named(sim::comm_init(comm, nranks, id_hash(id), rank, /*wait=*/true), comm, config);
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int n_ids,
                                      ncclUniqueId* ids, ncclConfig_t* config) {
  XPU_SIM_ENTRY();
  if (n_ids < 1 || ids == nullptr) return ncclInvalidArgument;
  // Every rank passes the same id list; the first id names the communicator.
  return named(sim::comm_init(comm, nranks, id_hash(ids[0]), rank, /*wait=*/true), comm, config);
}

ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  XPU_SIM_ENTRY();
  return cudaMalloc(ptr, size) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

ncclResult_t ncclMemFree(void* ptr) {
  XPU_SIM_ENTRY();
  cudaFree(ptr);
  return ncclSuccess;
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  XPU_SIM_ENTRY();
  if (comms == nullptr || ndev < 1) return ncclInvalidArgument;
  ncclUniqueId id;
  if (ncclResult_t res = ncclGetUniqueId(&id); res != ncclSuccess) return res;
  // All ranks live in this process: join them all first, then nobody waits.
  for (int i = 0; i < ndev; ++i) {
    if (ncclResult_t res = sim::comm_init(&comms[i], ndev, id_hash(id), i, false);
        res != ncclSuccess) {
      for (int j = 0; j < i; ++j) sim::comm_release(comms[j], true);
      return res;
    }
    comms[i]->device = devlist != nullptr ? devlist[i] : i;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  XPU_SIM_ENTRY();
  if (ncclResult_t res = check_comm(comm); res != ncclSuccess) return res;
  if (newcomm == nullptr || (color < 0 && color != NCCL_SPLIT_NOCOLOR)) {
    return ncclInvalidArgument;
  }
  return named(sim::comm_split(comm, color, key, newcomm), newcomm, config);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  XPU_SIM_ENTRY();
  return check_comm(comm);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  XPU_SIM_ENTRY();
  if (comm == nullptr) return ncclInvalidArgument;
  sim::comm_release(comm, false);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  XPU_SIM_ENTRY();
  if (comm == nullptr) return ncclSuccess;
  sim::comm_release(comm, true);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  XPU_SIM_ENTRY();
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = comm->state->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  XPU_SIM_ENTRY();
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->state->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  XPU_SIM_ENTRY();
  if (comm == nullptr || device == nullptr) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  XPU_SIM_ENTRY();
  if (comm == nullptr || async_error == nullptr) return ncclInvalidArgument;
  *async_error = ncclSuccess;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  XPU_SIM_ENTRY();
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  XPU_SIM_ENTRY();
  (void)comm;
  return sim::last_error();
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  XPU_SIM_ENTRY();
  (void)sendbuff, (void)recvbuff, (void)op;
  return collective(comm, count, datatype, 1, stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  (void)sendbuff, (void)recvbuff;
  const size_t nranks = comm != nullptr && comm->state ? comm->state->nranks : 1;
  return collective(comm, sendcount, datatype, nranks, stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  XPU_SIM_ENTRY();
  (void)sendbuff, (void)recvbuff, (void)op;
  const size_t nranks = comm != nullptr && comm->state ? comm->state->nranks : 1;
  return collective(comm, recvcount, datatype, nranks, stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  XPU_SIM_ENTRY();
  (void)sendbuff, (void)recvbuff;
  if (ncclResult_t res = check_comm(comm); res != ncclSuccess) return res;
  if (ncclResult_t res = check_root(comm, root); res != ncclSuccess) return res;
  return collective(comm, count, datatype, 1, stream);
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  XPU_SIM_ENTRY();
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  (void)sendbuff, (void)recvbuff, (void)op;
  if (ncclResult_t res = check_comm(comm); res != ncclSuccess) return res;
  if (ncclResult_t res = check_root(comm, root); res != ncclSuccess) return res;
  return collective(comm, count, datatype, 1, stream);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  (void)sendbuff;
  return point_to_point(true, count, datatype, peer, comm, stream);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  (void)recvbuff;
  return point_to_point(false, count, datatype, peer, comm, stream);
}

ncclResult_t ncclGroupStart() {
  XPU_SIM_ENTRY();
  return sim::group_start();
}
ncclResult_t ncclGroupEnd() {
  XPU_SIM_ENTRY();
  return sim::group_end();
}

}  // extern "C"
