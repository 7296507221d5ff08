#include "inject/timed_call.h"

#include "common/clock.h"
#include "inject/bench_parts.h"
#include "inject/comm_registry.h"
#include "inject/cuda_runtime_calls.h"
#include "inject/event_pool.h"
#include "inject/nccl_profiler_tags.h"
#include "inject/runtime.h"
#include "inject/sample_gate.h"

namespace xpu_timer::inject {
namespace {

// A failed runtime call of ours leaves its error as the thread's "last
// error", which PyTorch reads with cudaGetLastError after its own launches:
// take it back so the user never sees our failure.
void count_cuda_error(RuntimeState* st) {
  st->counters.hook_errors.fetch_add(1, std::memory_order_relaxed);
  cuda_calls().get_last_error();
}

void advance_comms(const OpDesc& d, OpRecord* rec) {
  CommRegistry& reg = comm_registry();
  rec->nmarks = 0;
  for (uint32_t i = 0; i < d.ncomms && i < static_cast<uint32_t>(kMaxCommMarks); ++i) {
    CommEntry& e = reg.entry(d.comms[i].comm_index);
    const uint64_t seq =
        e.issued_seq.fetch_add(d.comms[i].count, std::memory_order_relaxed) + d.comms[i].count;
    rec->marks[i] = CommMark{d.comms[i].comm_index, 0, seq};
    rec->nmarks = static_cast<uint8_t>(i + 1);
    if (i == d.last_comm) {
      rec->comm_hash = e.hash.load(std::memory_order_relaxed);
      rec->seq = seq;
      rec->nranks = static_cast<uint32_t>(e.nranks.load(std::memory_order_relaxed));
    }
  }
}

// The descriptive fields of the record's head (inject/op_record.h).
void describe_head(const OpDesc& d, OpRecord* rec) {
  rec->name = static_cast<uint16_t>(d.name);
  rec->kind = static_cast<uint8_t>(proto::op_kind_of(d.name));
  rec->dtype = static_cast<uint8_t>(d.dtype);
  rec->bytes = d.bytes;
  rec->flops = d.flops;
  rec->m = d.m;
  rec->n = d.n;
  rec->k = d.k;
  rec->batch = d.batch;
  rec->gemm_ops = d.gemm_ops;
}

// The descriptive fields every published record carries.
void describe(const OpDesc& d, OpRecord* rec) {
  describe_head(d, rec);
  rec->group_size = d.group_size;
  rec->count = d.count;
  rec->peer = d.peer;
  rec->red_op = d.red_op;
}

}  // namespace

uint64_t TimedCall::cost_begin(RuntimeState* st) {
  // One call in kHookSampleEvery of this thread measures what begin() and
  // end() cost it (proto::SelfCost): two clock reads more on that call only.
  __attribute__((tls_model("initial-exec"))) static thread_local uint64_t calls = 0;
  if (++calls % HookCounters::kHookSampleEvery != 0) return 0;
  sampled_st_ = st;
  return monotonic_ns();
}

void TimedCall::cost_after_begin(uint64_t t0) {
  if (t0 == 0) return;
  sampled_ns_ = monotonic_ns() - t0;
  if (pair_ == nullptr) add_sample();  // no end() part to wait for
}

bool TimedCall::begin(RuntimeState* st, const OpDesc& d, cudaStream_t stream) {
  const uint64_t t0 = cost_begin(st);
  bool timed = should_time(st, d);
  // Sampling (docs/architecture.md "The hot path", 4): a sampled-out GEMM or
  // copy is only counted: no CUDA call at all. A collective still records
  // both events, as markers for hang detection (docs/architecture.md "Hang
  // detection"): the start marker says when it could start (the work before
  // it on its stream, and what the stream waits for, had finished), the end
  // marker that it completed. Nothing is measured from them.
  const bool nccl = proto::op_kind_of(d.name) == proto::OpKind::kNccl;
  if (nccl && bench_part_off(BenchPart::kCollectiveEvents)) {
    publish_untimed(st, d, stream, /*advance=*/true);  // a benchmark's: no events
    timed = false;
  } else if (timed || nccl) {
    timed = begin_events(st, d, stream, timed);
  } else {
    publish_untimed(st, d, stream, /*advance=*/false);
  }
  cost_after_begin(t0);
  return timed;
}

void TimedCall::add_sample() {
  sampled_st_->counters.hook_sampled_calls.fetch_add(1, std::memory_order_relaxed);
  sampled_st_->counters.hook_sampled_ns.fetch_add(sampled_ns_, std::memory_order_relaxed);
  sampled_st_ = nullptr;
}

bool TimedCall::should_time(RuntimeState* st, const OpDesc& d) {
  // A (operation, shape) seen again within the sampling interval is not timed.
  const uint64_t key = sample_key(static_cast<uint64_t>(d.name), static_cast<uint64_t>(d.dtype),
                                  d.flops, d.bytes, d.group_size);
  st->gate->prefetch(key);  // its slot arrives while the clock is read
  now_ns_ = monotonic_ns();
  return st->gate->should_time(key, now_ns_);
}

void TimedCall::publish_untimed(RuntimeState* st, const OpDesc& d, cudaStream_t stream,
                                bool advance) {
  uint64_t pos = 0;
  auto* cell = st->queue.try_reserve(&pos);
  if (cell == nullptr) {
    st->counters.dropped_queue_full.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // The Poller completes an untimed record when it drains it (no FIFO): the
  // stream only reaches the flight recorder. Usually the head alone, written
  // in place (one cache line of the cell; the tail keeps whatever an earlier
  // record left, never read); a record whose tail holds more, whole.
  OpRecord& r = cell->item;
  if (!advance && tail_is_default(d.device, d.group_size, d.count, d.bytes, d.peer, d.red_op)) {
    describe_head(d, &r);
    r.nmarks = 0;
    r.flags = static_cast<uint8_t>(OpRecord::kUntimed | OpRecord::kHeadOnly |
                                   (d.count != 0 ? OpRecord::kCountIsBytes : 0));
  } else {
    r = OpRecord{};
    describe(d, &r);
    r.device = d.device;
    r.flags = OpRecord::kUntimed;
    // A collective's sequence numbers advance as when it is timed, so that
    // they stay identical across ranks.
    if (advance) advance_comms(d, &r);
  }
  r.valid = 1;
  r.launch_ns = now_ns_;
  r.stream = reinterpret_cast<uintptr_t>(stream);
  st->queue.publish(cell, pos);
}

bool TimedCall::begin_events(RuntimeState* st, const OpDesc& d, cudaStream_t stream, bool timed) {
  const CudaRuntimeCalls& cuda = cuda_calls();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cuda.stream_is_capturing(stream, &capture) != cudaSuccess) {
    count_cuda_error(st);
    return false;
  }
  if (capture != cudaStreamCaptureStatusNone) {
    // Recording an event into a capture would change the user's graph; the
    // operation runs at replay time, which we do not see: no seq either.
    st->counters.skipped_capture.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  int device = d.device;
  if (device < 0 && cuda.get_device(&device) != cudaSuccess) {
    count_cuda_error(st);
    return false;
  }

  OpRecord rec{};
  describe(d, &rec);
  rec.device = device;
  rec.stream = reinterpret_cast<uintptr_t>(stream);
  // Sequence numbers advance even when the call goes untimed below, so that
  // they stay identical across ranks; a later completion on the same
  // communicator catches completed_seq up.
  advance_comms(d, &rec);

  uint64_t pos = 0;
  auto* cell = st->queue.try_reserve(&pos);
  if (cell == nullptr) {
    st->counters.dropped_queue_full.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  EventPool* pool = st->pools.get(device);
  uint32_t index = 0;
  int err = cudaSuccess;
  EventPair* pair = pool != nullptr ? pool->take(&index, &err) : nullptr;
  if (pair == nullptr) {
    // The cell is ours: publish it empty so the Poller can move past it.
    cell->item = OpRecord{};
    st->queue.publish(cell, pos);
    if (err != cudaSuccess) {
      count_cuda_error(st);
      switch_to_pass_through("cudaEventCreateWithFlags failed");
    } else if (pool == nullptr) {  // device id out of range, or out of memory
      st->counters.hook_errors.fetch_add(1, std::memory_order_relaxed);
    } else {  // every pair of the device is in flight: same remedy as a full queue
      st->counters.dropped_queue_full.fetch_add(1, std::memory_order_relaxed);
    }
    return false;
  }
  pair->state.store(static_cast<uint32_t>(PairState::kRecording), std::memory_order_relaxed);
  rec.pair_index = index;
  rec.launch_ns = now_ns_;
  // Every operation that reaches here (timed, or a collective) records its
  // start: the hang clock of an operation starts when this event completes,
  // never at launch, so work queued behind a long stream of kernels is not
  // taken for a hang. One cudaEventRecord per sampled-out collective.
  if (cuda.event_record(pair->start, stream) != cudaSuccess) {
    pair->state.store(static_cast<uint32_t>(PairState::kAbandoned), std::memory_order_relaxed);
    rec.valid = 0;  // the Poller only gives the pair back
    rec.flags = OpRecord::kHasPair;
    cell->item = rec;
    st->queue.publish(cell, pos);
    count_cuda_error(st);
    return false;
  }
  rec.valid = 1;
  rec.flags = timed ? OpRecord::kHasPair : (OpRecord::kHasPair | OpRecord::kEndOnly);
  cell->item = rec;
  st->queue.publish(cell, pos);  // release: the pair's state and events are visible
  st_ = st;
  pair_ = pair;
  stream_ = stream;
  nccl_ = rec.kind == static_cast<uint8_t>(proto::OpKind::kNccl);
  device_ = device;
  pair_index_ = index;
  if (nccl_) nccl_tag_call_begin();
  return true;
}

void TimedCall::end(bool call_ok) {
  if (sampled_st_ == nullptr) {
    end_call(call_ok);
    return;
  }
  const uint64_t t0 = monotonic_ns();
  end_call(call_ok);
  sampled_ns_ += monotonic_ns() - t0;
  add_sample();
}

void TimedCall::end_call(bool call_ok) {
  if (pair_ == nullptr) return;
  PairState state = PairState::kCallFailed;
  if (call_ok) {
    if (cuda_calls().event_record(pair_->end, stream_) == cudaSuccess) {
      state = PairState::kEnded;
    } else {
      state = PairState::kAbandoned;
      count_cuda_error(st_);
    }
  }
  // The tag is stored before the release below: the Poller that sees kEnded
  // sees the tag of this call, not of the pair's previous use.
  if (nccl_) nccl_tag_store(device_, pair_index_, nccl_tag_call_end());
  // Release: the Poller that reads kEnded may query the end event.
  pair_->state.store(static_cast<uint32_t>(state), std::memory_order_release);
  pair_ = nullptr;
}

}  // namespace xpu_timer::inject
