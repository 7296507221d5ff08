// What NCCL's profiler plugin interface tells about the collectives of one
// hooked call (algorithm, protocol, transport, channels), and how it reaches
// that call's record without reading NCCL's private structs.
//
// Correlation: NCCL starts the profiler's Coll event of a collective while
// it launches it, on the thread that called ncclAllReduce (outside a group)
// or ncclGroupEnd (a group), i.e. inside our hook's real call, for blocking
// communicators launched eagerly (hostStreamPlanTask run inline by
// ncclLaunchKernelAfter_NoCuda). So:
//   1. TimedCall::begin of an NCCL operation opens the thread's tag,
//   2. the plugin's startEvent on that thread merges each Coll event into it,
//   3. TimedCall::end closes it and stores it beside the operation's event
//      pair (side table keyed by device and pair index) before publishing
//      the pair's end state with release order,
//   4. the Poller, which reads that state with acquire order, takes the tag
//      when it folds the operation into the metrics.
// Coll events on a thread with no open tag (non-blocking communicators
// launched by NCCL's own thread, graph replays, calls we did not time) are
// counted and dropped: those operations keep algo="unknown".
//
// Threads: begin/end/note on user threads (thread_local, initial-exec TLS: no
// allocation, no lock); store on user threads; load on the Poller.
#pragma once

#include <cstdint>

namespace xpu_timer::inject {

struct NcclTag {
  uint8_t algo = 0;       // proto::NcclAlgo
  uint8_t proto = 0;      // proto::NcclProto
  uint8_t transport = 0;  // proto::NcclTransport
  uint8_t nchannels = 0;  // largest channel count among the Coll events
};

uint32_t pack_nccl_tag(const NcclTag& t);
NcclTag unpack_nccl_tag(uint32_t v);

// TimedCall side (the thread of the hooked call).
void nccl_tag_call_begin();
NcclTag nccl_tag_call_end();

// Plugin side: one Coll event on the calling thread.
void nccl_tag_note_coll(uint8_t algo, uint8_t proto, uint8_t transport, uint8_t nchannels);
// Coll events seen with no hooked call open on their thread.
uint64_t nccl_tag_uncorrelated_events();

// Side table beside the EventPools' pairs. Out-of-range keys are ignored
// (store) or read as an empty tag (load).
void nccl_tag_store(int device, uint32_t pair_index, const NcclTag& tag);
NcclTag nccl_tag_load(int device, uint32_t pair_index);

// NCCL's names (ncclAlgoStr / ncclProtoStr) and v1's enum values -> ours.
uint8_t nccl_algo_from_name(const char* name);
uint8_t nccl_proto_from_name(const char* name);
uint8_t nccl_algo_from_v1(uint8_t v);
uint8_t nccl_proto_from_v1(uint8_t v);

}  // namespace xpu_timer::inject
