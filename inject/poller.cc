#include "inject/poller.h"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "inject/bench_parts.h"
#include "inject/comm_registry.h"
#include "inject/crash_handlers.h"
#include "inject/cuda_runtime_calls.h"
#include "inject/dtype_mapping.h"
#include "inject/event_pool.h"
#include "inject/nccl_profiler_tags.h"
#include "inject/python_probes.h"
#include "inject/runtime.h"
#include "inject/settings.h"

namespace xpu_timer::inject {
namespace {

// Passes while work is pending are XPU_TIMER_POLL_INTERVAL_MS apart (settings.h).
constexpr uint64_t kIdlePassNs = 5ull * 1000 * 1000;  // nothing pending
constexpr uint64_t kDrainLimitNs = 30ull * 1000 * 1000 * 1000;
constexpr int kMaxDrainPerPass = 1 << 16;

bool capture_related(cudaError_t e) {
  return e == cudaErrorStreamCaptureUnsupported || e == cudaErrorStreamCaptureInvalidated ||
         e == cudaErrorStreamCaptureImplicit || e == cudaErrorStreamCaptureWrongThread;
}

void sleep_ns(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  nanosleep(&ts, nullptr);
}

}  // namespace

Poller::Poller(RuntimeState* state)
    : state_(state),
      busy_pass_ns_(static_cast<uint64_t>(settings().poll_interval_ms * 1e6)),
      completed_seq_(CommRegistry::kCapacity, 0) {}

bool Poller::start() {
  // Block every signal in our thread: process-directed signals (SIGINT,
  // SIGTERM, SIGCHLD...) must keep reaching the user's threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t tid;
  const int rc = pthread_create(&tid, nullptr, &Poller::thread_main, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    XPU_TIMER_LOG_WARN("pthread_create failed: %s; timing is off", std::strerror(rc));
    return false;
  }
  pthread_detach(tid);
  return true;
}

bool Poller::wait_done(uint64_t timeout_ns) const {
  const uint64_t deadline = monotonic_ns() + timeout_ns;
  while (!done_.load(std::memory_order_acquire)) {
    if (monotonic_ns() >= deadline) return false;
    sleep_ns(200 * 1000);
  }
  return true;
}

void* Poller::thread_main(void* self) {
  pthread_setname_np(pthread_self(), "xpu_timer_poll");
  auto* poller = static_cast<Poller*>(self);
  // Our own hooks must never time calls made from this thread.
  HookScope scope;
  try {
    poller->run();
  } catch (...) {  // allocation failure in a container: stop timing, keep the job
    switch_to_pass_through("background thread ran out of memory");
  }
  poller->done_.store(true, std::memory_order_release);
  return nullptr;
}

void Poller::run() {
  while (!stop_.load(std::memory_order_acquire)) {
    const uint64_t now = monotonic_ns();
    if (bench_part_off(BenchPart::kPollerPasses)) {
      sleep_ns(busy_pass_ns_);
      continue;
    }
    drain_queue();
    drain_ranges();
    sample_launches(now, /*force=*/false);
    if (cuda_ok_ && !bench_part_off(BenchPart::kEventQueries)) complete_ready(now, true);
    settle_steps(now);
    if (!draining_ && !state_->link.alive()) {
      switch_to_pass_through("the supervisor closed its connection");
      draining_ = true;
      drain_deadline_ns_ = now + kDrainLimitNs;
    }
    publish(now);
    const bool pending = inflight_ > 0 || state_->queue.approx_size() > 0;
    if (draining_ && (!pending || now > drain_deadline_ns_ || !cuda_ok_)) break;
    sleep_ns(pending ? busy_pass_ns_ : std::max(busy_pass_ns_, kIdlePassNs));
  }
  // Exit: one last non-blocking pass so the page's final counts include what
  // finished since the previous pass (the CUDA runtime is still alive: the
  // exit handler runs before its teardown).
  if (stop_.load(std::memory_order_acquire) && !draining_) {
    const uint64_t now = monotonic_ns();
    drain_queue();
    drain_ranges();
    sample_launches(now, /*force=*/true);  // the last interval, however short
    if (cuda_ok_) complete_ready(now, /*honour_stop=*/false);
    publish(now);
  }
}

void Poller::drain_queue() {
  OpRecord rec;
  const auto read = [&rec](const OpRecord& in_cell) { read_record(in_cell, &rec); };
  for (int i = 0; i < kMaxDrainPerPass && state_->queue.try_pop_with(read); ++i) {
    if (!rec.valid) {
      if (rec.flags & OpRecord::kHasPair) return_pair(rec);
      continue;
    }
    ++issued_total_;
    ++inflight_;
    Pending p;
    p.rec = rec;
    if (rec.flags & OpRecord::kUntimed) {  // sampled out: nothing to wait for
      record(p, static_cast<uint8_t>(recorder::OpState::kUntimed));
      finish(p, 0, Outcome::kCounted, monotonic_ns());
      continue;
    }
    record(p, static_cast<uint8_t>(recorder::OpState::kIssued));
    fifos_[StreamKey(rec.device, rec.stream)].push_back(p);
  }
}

namespace {

// The flight-recorder name of a host event.
proto::OpName recorded_as(HostEvent kind) {
  switch (kind) {
    case HostEvent::kNvtxRange:
      return proto::OpName::kNvtxRange;
    case HostEvent::kStep:
      return proto::OpName::kStep;
    case HostEvent::kGcPause:
      return proto::OpName::kGcPause;
    case HostEvent::kLoaderWait:
      return proto::OpName::kLoaderWait;
    case HostEvent::kDeviceMalloc:
      return proto::OpName::kDeviceMalloc;
    case HostEvent::kDeviceFree:
      return proto::OpName::kDeviceFree;
    case HostEvent::kPythonCall:
      return proto::OpName::kPythonCall;
  }
  return proto::OpName::kUnknown;
}

}  // namespace

void Poller::drain_ranges() {
  const int step_id = step_range_id();
  if (step_id >= 0) steps_.source = static_cast<uint32_t>(proto::StepSource::kNvtxRange);
  RangeRecord r;
  for (int i = 0; i < kMaxDrainPerPass && state_->ranges.try_pop(&r); ++i) {
    if (r.kind == HostEvent::kStep) {
      steps_.source = static_cast<uint32_t>(proto::StepSource::kOptimizer);
      add_step(r);
      continue;
    }
    const bool named = r.kind == HostEvent::kNvtxRange || r.kind == HostEvent::kPythonCall;
    if (!named) {  // GC, DataLoader, allocations: records only
      record_range(r, static_cast<uint16_t>(recorded_as(r.kind)));
      continue;
    }
    if (r.name_id >= proto::kMaxRanges) continue;  // cannot happen: ids are bounded
    const uint64_t duration = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
    proto::RangeSlot& slot = ranges_[r.name_id];
    ++slot.count;
    slot.sum_ns += duration;
    ++slot.hist[proto::hist_bucket_for_ns(duration)];
    range_dirty_[r.name_id] = true;
    record_range(r, static_cast<uint16_t>(recorded_as(r.kind)));
    if (r.kind == HostEvent::kNvtxRange && static_cast<int>(r.name_id) == step_id) {
      add_step(r);
    }
  }
}

void Poller::add_step(const RangeRecord& r) {
  const uint64_t duration_ns = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
  ++steps_.steps;
  steps_.sum_ns += duration_ns;
  steps_.last_ns = duration_ns;
  ++steps_.hist[proto::hist_bucket_for_ns(duration_ns)];
  bubbles_.add_step(r.start_ns, r.end_ns,
                    record_range(r, static_cast<uint16_t>(proto::OpName::kStep)));
}

uint64_t Poller::record_range(const RangeRecord& r, uint16_t op_name) {
  recorder::RingWriter& ring = state_->ring;
  if (!ring.ok()) return kNoRingPos;
  const RangeNames& names = range_names();
  const bool named = op_name == static_cast<uint16_t>(proto::OpName::kNvtxRange) ||
                     op_name == static_cast<uint16_t>(proto::OpName::kPythonCall);
  if (named) {
    const uint32_t known = names.size();
    while (ring_names_ < known && ring_names_ <= r.name_id) {
      ring.set_name(ring_names_, names.name(ring_names_));
      ++ring_names_;
    }
  }
  recorder::RecordData d = host_record(op_name, r.start_ns, r.end_ns);
  d.peer = r.depth;
  d.stream = r.tid;
  d.seq = named ? r.name_id : 0;
  d.bytes = r.value;  // GC: objects freed; allocations: bytes
  const uint64_t pos = ring.append(d);
  if (op_name == static_cast<uint16_t>(proto::OpName::kStep)) {
    if (step_records_.size() >= StepBubbles::kMaxPendingSteps) {
      step_records_.erase(step_records_.begin());
    }
    step_records_[pos] = d;
  }
  return pos;
}

void Poller::settle_steps(uint64_t pass_start_ns) {
  // No operation launched before the horizon is unaccounted: those in
  // flight are FIFO heads or behind one launched earlier, and one launched
  // before the previous pass began was in the queue that this pass drained.
  uint64_t horizon = prev_pass_ns_;
  prev_pass_ns_ = pass_start_ns;
  for (const auto& [key, fifo] : fifos_) {
    if (!fifo.empty()) horizon = std::min(horizon, fifo.front().rec.launch_ns);
  }
  bubbles_.settle(horizon, [this](const StepBubbles::Measured& m) {
    ++steps_.measured;
    steps_.busy_ns += m.busy_ns;
    steps_.idle_ns += m.window_ns - m.busy_ns;
    steps_.last_busy_ns = m.busy_ns;
    steps_.last_window_ns = m.window_ns;
    steps_.untimed_ops += m.untimed;
    auto it = step_records_.find(m.token);
    if (it == step_records_.end()) return;
    it->second.flags |= recorder::kRecMeasured;
    it->second.bytes = m.busy_ns;
    it->second.count = m.untimed;
    state_->ring.update(m.token, it->second);
    step_records_.erase(it);
  });
}

void Poller::complete_ready(uint64_t now_ns, bool honour_stop) {
  for (auto& [key, fifo] : fifos_) {
    while (!fifo.empty() && !(honour_stop && stop_.load(std::memory_order_relaxed))) {
      bool done = false;
      if (!process_head(fifo.front(), now_ns, &done)) return;  // CUDA failed
      if (!done) break;  // stream order: nothing behind the head finished first
      fifo.pop_front();
    }
  }
}

bool Poller::process_head(Pending& p, uint64_t now_ns, bool* done) {
  *done = false;
  EventPool* pool = state_->pools.peek(p.rec.device);
  if (pool == nullptr) {  // cannot happen: the hook took the pair from it
    finish(p, 0, Outcome::kNotRun, now_ns);
    *done = true;
    return true;
  }
  EventPair& pair = pool->pair(p.rec.pair_index);
  const auto state = static_cast<PairState>(pair.state.load(std::memory_order_acquire));
  if (state != PairState::kRecording && state != PairState::kEnded) {
    record(p, static_cast<uint8_t>(recorder::OpState::kFailed));  // nothing ran, nothing to time
    finish(p, 0, Outcome::kNotRun, now_ns);
    *done = true;
    return true;
  }
  if (!use_device(p.rec.device)) return false;
  const CudaRuntimeCalls& cuda = cuda_calls();
  cudaError_t err;
  // Every record in a FIFO has its start event recorded before it was
  // published (timed call or collective marker, inject/timed_call.cc), so it
  // may be queried even while the host call is still running: a collective
  // that blocks in its host call but could start is on the hang clock too.
  // started_ns is that clock's origin (docs/architecture.md "Hang detection").
  //
  // A recorded end event is asked first: complete, the start is too (one
  // stream, start first), so most operations cost one query, not two (a
  // saving of the Poller's; none a host-bound step showed:
  // bench/results/2026-11-29-hostbound-queries-h200x1.md).
  const bool end_first = !bench_part_off(BenchPart::kEndQueryFirst);  // off: a benchmark's
  if (state == PairState::kEnded && end_first) {
    if (!ask_end(p, pair, now_ns, done)) return false;
    if (*done) return true;
  }
  if (p.started_ns == 0) {
    err = cuda.event_query(pair.start);
    if (err == cudaSuccess) {
      p.started_ns = started_at(p, now_ns);
      record(p, static_cast<uint8_t>(recorder::OpState::kRunning));
    } else if (err != cudaErrorNotReady) {
      if (capture_related(err)) return true;  // transient: another thread captures
      cuda_failed("cudaEventQuery", err);
      return false;
    }
  }
  if (state == PairState::kEnded && !end_first) return ask_end(p, pair, now_ns, done);
  return true;  // the end event is not recorded, or not complete yet
}

bool Poller::ask_end(Pending& p, EventPair& pair, uint64_t now_ns, bool* done) {
  const cudaError_t err = cuda_calls().event_query(pair.end);
  if (err == cudaSuccess) return complete_head(p, pair, now_ns, done);
  if (err == cudaErrorNotReady || capture_related(err)) return true;  // not yet; or transient
  cuda_failed("cudaEventQuery", err);
  return false;
}

uint64_t Poller::started_at(const Pending& p, uint64_t now_ns) {
  // now_ns is this pass's clock, read before the queue was drained: an
  // operation published during the pass is not seen starting before it was
  // launched.
  return std::max(now_ns, p.rec.launch_ns);
}

bool Poller::complete_head(Pending& p, EventPair& pair, uint64_t now_ns, bool* done) {
  const CudaRuntimeCalls& cuda = cuda_calls();
  const uint64_t seen_ns = monotonic_ns();  // after the query: the end was complete by now
  // Its start completed no later than its end: on the hang clock from this
  // pass, as if the start query had been made.
  if (p.started_ns == 0) p.started_ns = started_at(p, now_ns);
  const bool end_only = p.rec.flags & OpRecord::kEndOnly;  // markers only: not timed
  if (end_only) {  // a completion marker: counted, not timed
    // The start marker's GPU time is the rank's arrival at the collective
    // (the work before it on its stream had finished): the supervisor's
    // straggler analysis compares it across ranks. The Poller's call, never
    // the user's thread's.
    map_gpu_times(p, pair.start, pair.end, 0, seen_ns);
    record(p, static_cast<uint8_t>(recorder::OpState::kCompleted));
    finish(p, 0, Outcome::kCounted, now_ns);
    *done = true;
    return true;
  }
  float ms = 0;
  const cudaError_t err = cuda.event_elapsed_time(&ms, pair.start, pair.end);
  if (err != cudaSuccess) {
    cuda_failed("cudaEventElapsedTime", err);
    return false;
  }
  const double ns = static_cast<double>(ms) * 1e6;
  const uint64_t duration_ns = ns > 0 ? static_cast<uint64_t>(ns) : 0;
  map_gpu_times(p, pair.start, nullptr, duration_ns, seen_ns);
  record(p, static_cast<uint8_t>(recorder::OpState::kCompleted));
  finish(p, duration_ns, Outcome::kTimed, now_ns);
  *done = true;
  return true;
}

void Poller::finish(const Pending& p, uint64_t duration_ns, Outcome outcome, uint64_t now_ns) {
  const OpRecord& r = p.rec;
  ++completed_total_;
  --inflight_;
  for (int i = 0; i < r.nmarks; ++i) {
    uint64_t& done = completed_seq_[r.marks[i].comm_index];
    done = std::max(done, r.marks[i].seq);
  }
  last_completed_ = op_ref_of(p);
  have_last_completed_ = true;
  // Completed calls are aggregated: timed ones with their duration, sampled-
  // out ones (kUntimed, or kEndOnly whose end event completed) as counts.
  const bool timed = outcome == Outcome::kTimed;
  if (outcome != Outcome::kNotRun) {
    const auto kind = static_cast<proto::OpKind>(r.kind);
    MetricsTable::Key key{r.name, r.dtype,
                          log2_bucket(kind == proto::OpKind::kGemm ? r.flops : r.bytes),
                          kind == proto::OpKind::kNccl ? r.nranks : 0};
    NcclTag tag;
    if (kind == proto::OpKind::kNccl) {
      // Stored by the hook before its release store of the pair state we
      // acquired in process_head().
      tag = nccl_tag_load(r.device, r.pair_index);
      key.algo = tag.algo;
      key.proto = tag.proto;
      key.transport = tag.transport;
    }
    const bool added = timed
                           ? metrics_.add(key, duration_ns, r.bytes, r.flops, now_ns, tag.nchannels)
                           : metrics_.add_untimed(key, r.bytes, r.flops, now_ns);
    if (!added && metrics_lost_++ == 0) {
      XPU_TIMER_LOG_WARN("more than %d metric keys: further new keys are not aggregated",
                         proto::kMaxMetrics);
    }
  }
  // Step GPU idle time: matrix products and copies are the busy GPU.
  const auto op_kind = static_cast<proto::OpKind>(r.kind);
  if (op_kind == proto::OpKind::kGemm || op_kind == proto::OpKind::kMemcpy) {
    if (timed && p.gpu_start_ns != 0) {
      bubbles_.add_busy(p.gpu_start_ns, p.gpu_end_ns);
    } else if (outcome == Outcome::kCounted) {
      bubbles_.add_untimed(r.launch_ns);
    }
  }
  if ((r.flags & OpRecord::kHasPair) && !p.keep_pair) return_pair(r);
}

void Poller::return_pair(const OpRecord& rec) {
  EventPool* pool = state_->pools.peek(rec.device);
  if (pool != nullptr) pool->give_back(rec.pair_index);
}

bool Poller::use_device(int device) {
  if (device == current_device_) return true;
  const CudaRuntimeCalls& cuda = cuda_calls();
  const cudaError_t err = cuda.set_device(device);
  if (err != cudaSuccess) {
    cuda_failed("cudaSetDevice", err);
    return false;
  }
  if (current_device_ < 0 && cuda.thread_exchange_capture_mode != nullptr) {
    // Relaxed mode for this thread: our event queries neither fail nor
    // invalidate a global-mode graph capture running on a user thread.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (cuda.thread_exchange_capture_mode(&mode) != cudaSuccess) cuda.get_last_error();
  }
  current_device_ = device;
  return true;
}

void Poller::cuda_failed(const char* call, int err) {
  ++poller_errors_;
  cuda_ok_ = false;
  XPU_TIMER_LOG_WARN("%s failed in the background thread (cudaError %d)", call, err);
  switch_to_pass_through("a CUDA call of the background thread failed");
  // No more CUDA calls from here: forget what is pending (its events leak).
  fifos_.clear();
  inflight_ = 0;
}

proto::OpRef Poller::op_ref_of(const Pending& p) {
  proto::OpRef ref{};
  ref.name = p.rec.name;
  ref.kind = p.rec.kind;
  ref.dtype = p.rec.dtype;
  ref.group_size = p.rec.group_size;
  ref.comm_hash = p.rec.comm_hash;
  ref.seq = p.rec.seq;
  ref.launch_ns = p.rec.launch_ns;
  ref.started_ns = p.started_ns;
  ref.bytes = p.rec.bytes;
  ref.flops = p.rec.flops;
  return ref;
}

void Poller::fill_comms(proto::StatusPage* page) {
  // Live communicators first, then destroyed ones still owing completions.
  const CommRegistry& reg = comm_registry();
  const uint32_t n = reg.size();
  uint32_t out = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < n && out < static_cast<uint32_t>(proto::kMaxComms); ++i) {
      const CommEntry& e = reg.entry(i);
      const bool destroyed = e.flags.load(std::memory_order_relaxed) & CommEntry::kDestroyed;
      const uint64_t issued = e.issued_seq.load(std::memory_order_relaxed);
      if (pass == 0 ? destroyed : (!destroyed || issued <= completed_seq_[i])) continue;
      proto::CommSlot& s = page->comms[out++];
      s.comm_hash = e.hash.load(std::memory_order_relaxed);
      s.nranks = e.nranks.load(std::memory_order_relaxed);
      s.rank = e.rank.load(std::memory_order_relaxed);
      s.issued_seq = issued;
      s.completed_seq = std::min(completed_seq_[i], issued);
      s.flags = (e.flags.load(std::memory_order_relaxed) & CommEntry::kUnknown)
                    ? proto::kCommFlagUnknownIdentity
                    : 0;
      // Written once before it is shown (comm_registry.h): no race.
      static_assert(sizeof(s.name) == sizeof(e.name));
      std::memcpy(s.name, e.shown_name(), sizeof(s.name));
    }
  }
  page->ncomms = out;
}

const Poller::Pending* Poller::hang_clock_op() const {
  // Only a FIFO head can have started (stream order), and a head launched
  // before the others of its FIFO: the heads are enough.
  const Pending* started = nullptr;
  const Pending* oldest = nullptr;
  for (const auto& [key, fifo] : fifos_) {
    if (fifo.empty()) continue;
    const Pending& head = fifo.front();
    if (head.started_ns != 0 && (started == nullptr || head.started_ns < started->started_ns)) {
      started = &head;
    }
    if (oldest == nullptr || head.rec.launch_ns < oldest->rec.launch_ns) oldest = &head;
  }
  return started != nullptr ? started : oldest;
}

void Poller::publish(uint64_t now_ns) {
  proto::StatusPage* page = state_->page->page();
  const Pending* oldest = hang_clock_op();
  const HookCounters& c = state_->counters;
  state_->page->begin_write();
  page->issued_total = issued_total_;
  page->completed_total = completed_total_;
  page->inflight_count = inflight_;
  page->oldest_inflight = oldest != nullptr ? op_ref_of(*oldest) : proto::OpRef{};
  if (have_last_completed_) page->last_completed = last_completed_;
  page->dropped_queue_full = c.dropped_queue_full.load(std::memory_order_relaxed);
  page->skipped_capture = c.skipped_capture.load(std::memory_order_relaxed);
  page->hook_errors = c.hook_errors.load(std::memory_order_relaxed) + poller_errors_;
  page->queue_depth = state_->queue.approx_size();
  page->runtime = state_->runtime_calls.snapshot();
  page->python = python_calls().snapshot();
  const RangeNames& names = range_names();
  const uint32_t nranges = names.size();
  for (uint32_t i = 0; i < nranges; ++i) {
    if (i >= page->nranges) {  // a new name: its bytes once
      std::memcpy(page->ranges[i].name, names.name(i), proto::kRangeNameBytes);
      page->ranges[i].kind = static_cast<uint32_t>(names.kind(i));
      range_dirty_[i] = true;
    }
    if (!range_dirty_[i]) continue;
    range_dirty_[i] = false;
    page->ranges[i].count = ranges_[i].count;
    page->ranges[i].sum_ns = ranges_[i].sum_ns;
    std::memcpy(page->ranges[i].hist, ranges_[i].hist, sizeof(ranges_[i].hist));
  }
  page->nranges = nranges;
  page->ranges_dropped = c.ranges_dropped.load(std::memory_order_relaxed);
  page->steps = steps_;
  // Our own cost: the Poller's CPU time, read every 100 ms (a system call).
  if (now_ns - std::min(now_ns, self_read_ns_) >= 100'000'000) {
    self_read_ns_ = now_ns;
    if (++handler_watch_ % 10 == 0) crash_watch_handlers();  // about once a second
    timespec cpu{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) {
      self_cpu_ns_ = static_cast<uint64_t>(cpu.tv_sec) * 1'000'000'000ull +
                     static_cast<uint64_t>(cpu.tv_nsec);
    }
  }
  page->self.poller_cpu_ns = self_cpu_ns_;
  page->self.hook_sampled_calls = c.hook_sampled_calls.load(std::memory_order_relaxed);
  page->self.hook_sampled_ns = c.hook_sampled_ns.load(std::memory_order_relaxed);
  page->self.hook_sample_every = HookCounters::kHookSampleEvery;
  fill_comms(page);
  metrics_.drain_dirty([page](uint32_t i, const proto::MetricSlot& s) { page->metrics[i] = s; });
  page->nmetrics = metrics_.size();
  state_->page->end_write();
  state_->page->heartbeat(now_ns);
}

}  // namespace xpu_timer::inject
