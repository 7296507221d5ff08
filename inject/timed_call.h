// The hot path shared by every hook: decide whether a call is timed, record
// the start event, publish the record, and after the real call record the
// end event. No locks, no allocation, no system calls in the steady state.
//
// Order (see docs/architecture.md "The hot path"):
//   begin(): capture check -> comm seq numbers -> reserve a queue cell (full:
//   count, untimed) -> take an event pair -> record start -> publish the
//   record with the pair in state kRecording.
// A sampled-out GEMM or copy stops after reserving its cell (no CUDA call);
// a sampled-out collective still records start and end, as markers for the
// hang clock (docs/architecture.md "Hang detection"), and is not timed.
// Hooks whose stream or exact description costs calls of their own (the
// stream of a cuBLAS handle, cuBLASLt's descriptor attributes, the direction
// of a cudaMemcpyDefault copy) use begin_lazy(): the sampling decision is
// taken on what the arguments give for free, and those calls are made only
// for a timed call.
//   end():   record end -> pair state kEnded (or kCallFailed when the real
//   call failed, kAbandoned when our record failed).
// Publishing before the real call lets the Poller see an operation whose
// host call never returns (e.g. NCCL blocking while connecting to a peer
// that never comes) as in flight; the pair state tells it not to query the
// end event yet (an event never recorded reads as complete).
//
// Threads: any user thread; one TimedCall object per hook invocation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/op_names.h"
#include "inject/bench_parts.h"
#include "inject/op_record.h"

namespace xpu_timer::inject {

struct RuntimeState;
struct EventPair;

// A communicator an operation (or each member of a group) advances.
struct CommUse {
  uint32_t comm_index;  // CommRegistry index
  uint32_t count;       // members on that communicator
};

struct OpDesc {
  proto::OpName name = proto::OpName::kUnknown;
  proto::DType dtype = proto::DType::kUnknown;
  uint32_t group_size = 1;
  uint64_t bytes = 0;
  uint64_t flops = 0;
  // What the flight recorder shows (common/recorder_ring.h); not part of
  // the sampling key.
  uint64_t count = 0;
  int32_t peer = -1;
  uint8_t red_op = 0;
  uint32_t m = 0, n = 0, k = 0, batch = 0;
  uint8_t gemm_ops = 0;  // recorder::gemm_ops_of(transa, transb)
  int device = -1;       // -1: the caller's current device
  uint32_t ncomms = 0;
  CommUse comms[kMaxCommMarks] = {};
  uint32_t last_comm = 0;  // index into comms[] of the last member's communicator
};

class TimedCall {
 public:
  // False when this call is not timed (the caller just calls through).
  bool begin(RuntimeState* st, const OpDesc& desc, cudaStream_t stream);
  // For GEMMs and copies: `desc` and `stream` are what the call's arguments
  // give without a library call (the stream may be a last known one: an
  // untimed record only carries it to the flight recorder). Only when the
  // call is timed, `resolve(OpDesc*, cudaStream_t*) -> bool` completes them
  // exactly (false: not timed; it counts its own failure).
  template <typename Resolve>
  bool begin_lazy(RuntimeState* st, const OpDesc& desc, cudaStream_t stream, Resolve&& resolve) {
    const uint64_t t0 = cost_begin(st);
    if (bench_part_off(BenchPart::kOpRecords)) {  // a benchmark's: described only
      cost_after_begin(t0);
      return false;
    }
    bool timed = should_time(st, desc) && !bench_part_off(BenchPart::kTimedOps);
    if (!timed) {
      publish_untimed(st, desc, stream, /*advance=*/false);
    } else {
      OpDesc exact = desc;
      timed = resolve(&exact, &stream) && begin_events(st, exact, stream, /*timed=*/true);
    }
    cost_after_begin(t0);
    return timed;
  }
  // call_ok: the real function reported success (or NCCL's ncclInProgress).
  void end(bool call_ok);

 private:
  // Self-cost sampling (proto::SelfCost): cost_begin() returns the start time
  // on the one call in kHookSampleEvery of this thread that measures itself,
  // else 0; cost_after_begin() adds the sample unless end() has a part to add.
  uint64_t cost_begin(RuntimeState* st);
  void cost_after_begin(uint64_t t0);
  bool should_time(RuntimeState* st, const OpDesc& desc);
  // An untimed record, counted when the Poller drains it; `advance`: a
  // collective's, whose communicators' sequence numbers advance.
  void publish_untimed(RuntimeState* st, const OpDesc& desc, cudaStream_t stream, bool advance);
  bool begin_events(RuntimeState* st, const OpDesc& desc, cudaStream_t stream, bool timed);
  void end_call(bool call_ok);
  void add_sample();

  RuntimeState* sampled_st_ = nullptr;  // this call's cost is measured
  uint64_t sampled_ns_ = 0;
  uint64_t now_ns_ = 0;  // the host call's time, read once by should_time()
  RuntimeState* st_ = nullptr;
  EventPair* pair_ = nullptr;
  cudaStream_t stream_ = nullptr;
  // NCCL operations: where end() leaves the profiler plugin's tag for the
  // Poller (nccl_profiler_tags.h).
  bool nccl_ = false;
  int device_ = -1;
  uint32_t pair_index_ = 0;
};

}  // namespace xpu_timer::inject
