// Hooks for the NCCL collectives and point-to-point calls, and for
// ncclGroupStart/End (see nccl_group.h for how groups are timed).
#include <nccl.h>

#include "inject/call_sites.h"
#include "inject/comm_registry.h"
#include "inject/dtype_mapping.h"
#include "inject/hook_export.h"
#include "inject/nccl_comms.h"
#include "inject/nccl_group.h"
#include "inject/real_functions.h"
#include "inject/runtime.h"
#include "inject/timed_call.h"

namespace xpu_timer::inject {
namespace {

using proto::OpName;

RealFunction<decltype(&::ncclAllReduce)> real_all_reduce(RealLib::kNccl, "ncclAllReduce");
RealFunction<decltype(&::ncclAllGather)> real_all_gather(RealLib::kNccl, "ncclAllGather");
RealFunction<decltype(&::ncclReduceScatter)> real_reduce_scatter(RealLib::kNccl,
                                                                 "ncclReduceScatter");
RealFunction<decltype(&::ncclBroadcast)> real_broadcast(RealLib::kNccl, "ncclBroadcast");
RealFunction<decltype(&::ncclReduce)> real_reduce(RealLib::kNccl, "ncclReduce");
RealFunction<decltype(&::ncclSend)> real_send(RealLib::kNccl, "ncclSend");
RealFunction<decltype(&::ncclRecv)> real_recv(RealLib::kNccl, "ncclRecv");
RealFunction<decltype(&::ncclGroupStart)> real_group_start(RealLib::kNccl, "ncclGroupStart");
RealFunction<decltype(&::ncclGroupEnd)> real_group_end(RealLib::kNccl, "ncclGroupEnd");

// How the payload of one rank relates to `count` (nccl-tests' "size": the
// larger of the send and receive buffers of this rank).
enum class Payload { kCount, kCountTimesNranks };

struct Collective {
  OpName name;
  ncclDataType_t dtype;
  size_t count;
  Payload payload;
  ncclComm_t comm;
  cudaStream_t stream;
  int peer = -1;          // root or peer
  int red_op = -1;        // ncclRedOp_t, -1 = none
};

template <typename Fn, typename... Args>
ncclResult_t timed_nccl_call(RealFunction<Fn>& real, const Collective& c, Args... args) noexcept {
  const Fn fn = real.get();
  if (fn == nullptr) return ncclSystemError;
  HookScope scope;
  RuntimeState* st = scope.nested() ? nullptr : active_runtime();
  if (st == nullptr) return fn(args...);

  const uint32_t index = comm_index_for(c.comm);
  int nranks = 0, device = -1;
  if (index != CommRegistry::kNone) {
    const CommEntry& e = comm_registry().entry(index);
    nranks = e.nranks.load(std::memory_order_relaxed);
    device = e.device.load(std::memory_order_relaxed);
  }
  uint64_t bytes = static_cast<uint64_t>(c.count) * nccl_type_size(c.dtype);
  if (c.payload == Payload::kCountTimesNranks && nranks > 0) bytes *= static_cast<uint64_t>(nranks);

  if (nccl_group_depth() > 0) {
    nccl_group_add(GroupMember{c.name, dtype_from_nccl(c.dtype), bytes, index, device, c.stream});
    return fn(args...);
  }
  OpDesc d;
  d.name = c.name;
  d.m = recorder::call_site_field(call_sites().capture());
  d.dtype = dtype_from_nccl(c.dtype);
  d.bytes = bytes;
  d.count = c.count;
  d.peer = c.peer;
  d.red_op = c.red_op >= 0 && c.red_op < 255 ? static_cast<uint8_t>(c.red_op + 1) : 0;
  d.device = device;
  if (index != CommRegistry::kNone) {
    d.ncomms = 1;
    d.comms[0] = CommUse{index, 1};
  }
  TimedCall call;
  call.begin(st, d, c.stream);
  const ncclResult_t r = fn(args...);
  call.end(nccl_launched(r));
  return r;
}

}  // namespace
}  // namespace xpu_timer::inject

using namespace xpu_timer::inject;  // NOLINT: hook definitions below are extern "C"
using xpu_timer::proto::OpName;

XPU_TIMER_HOOK ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream) {
  return timed_nccl_call(real_all_reduce,
                         {OpName::kAllReduce, datatype, count, Payload::kCount, comm, stream, -1, op},
                         sendbuff, recvbuff, count, datatype, op, comm, stream);
}

XPU_TIMER_HOOK ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          ncclDataType_t datatype, ncclComm_t comm,
                                          cudaStream_t stream) {
  return timed_nccl_call(
      real_all_gather,
      {OpName::kAllGather, datatype, sendcount, Payload::kCountTimesNranks, comm, stream}, sendbuff,
      recvbuff, sendcount, datatype, comm, stream);
}

XPU_TIMER_HOOK ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff,
                                              size_t recvcount, ncclDataType_t datatype,
                                              ncclRedOp_t op, ncclComm_t comm,
                                              cudaStream_t stream) {
  return timed_nccl_call(
      real_reduce_scatter,
      {OpName::kReduceScatter, datatype, recvcount, Payload::kCountTimesNranks, comm, stream, -1,
       op},
      sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
}

XPU_TIMER_HOOK ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, int root, ncclComm_t comm,
                                          cudaStream_t stream) {
  return timed_nccl_call(real_broadcast,
                         {OpName::kBroadcast, datatype, count, Payload::kCount, comm, stream, root},
                         sendbuff, recvbuff, count, datatype, root, comm, stream);
}

XPU_TIMER_HOOK ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, ncclRedOp_t op, int root,
                                       ncclComm_t comm, cudaStream_t stream) {
  return timed_nccl_call(real_reduce,
                         {OpName::kReduce, datatype, count, Payload::kCount, comm, stream, root, op},
                         sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

XPU_TIMER_HOOK ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype,
                                     int peer, ncclComm_t comm, cudaStream_t stream) {
  return timed_nccl_call(real_send, {OpName::kSend, datatype, count, Payload::kCount, comm, stream, peer},
                         sendbuff, count, datatype, peer, comm, stream);
}

XPU_TIMER_HOOK ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype,
                                     int peer, ncclComm_t comm, cudaStream_t stream) {
  return timed_nccl_call(real_recv, {OpName::kRecv, datatype, count, Payload::kCount, comm, stream, peer},
                         recvbuff, count, datatype, peer, comm, stream);
}

XPU_TIMER_HOOK ncclResult_t ncclGroupStart() {
  const auto fn = real_group_start.get();
  if (fn == nullptr) return ncclSystemError;
  HookScope scope;
  if (scope.nested()) return fn();
  active_runtime();  // may be the first NCCL call of the process
  nccl_group_enter();
  const ncclResult_t r = fn();
  if (r != ncclSuccess) nccl_group_cancel_enter();
  return r;
}

XPU_TIMER_HOOK ncclResult_t ncclGroupEnd() {
  const auto fn = real_group_end.get();
  if (fn == nullptr) return ncclSystemError;
  HookScope scope;
  if (scope.nested() || !nccl_group_leave()) return fn();
  OpDesc d;
  cudaStream_t stream = nullptr;
  uint32_t untracked = 0;
  const bool any = nccl_group_take(&d, &stream, &untracked);
  RuntimeState* st = active_runtime();
  if (st == nullptr || !any) return fn();
  if (untracked > 0) st->counters.hook_errors.fetch_add(untracked, std::memory_order_relaxed);
  d.m = xpu_timer::recorder::call_site_field(call_sites().capture());  // a group's: NCCL only
  TimedCall call;
  call.begin(st, d, stream);
  const ncclResult_t r = fn();
  call.end(nccl_launched(r));
  return r;
}
