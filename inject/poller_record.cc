// The Poller's flight-recorder writes (common/recorder_ring.h): an
// operation's record as it is appended and rewritten in place, the GPU times
// it carries, and the launch samples. Poller thread.
#include "common/recorder_ring.h"
#include "inject/bench_parts.h"
#include "inject/call_sites.h"
#include "inject/event_pool.h"
#include "inject/host_blocked.h"
#include "inject/per_thread_counter.h"
#include "inject/poller.h"
#include "inject/runtime.h"

namespace xpu_timer::inject {

void Poller::record(Pending& p, uint8_t state) {
  recorder::RingWriter& ring = state_->ring;
  if (!ring.ok()) return;
  const OpRecord& r = p.rec;
  if (r.kind == static_cast<uint8_t>(proto::OpKind::kNccl) && r.m > 0) {
    // Its call site, and any before it, in the ring before the record.
    const CallSites& sites = call_sites();
    const uint32_t known = sites.size();
    while (ring_sites_ < known && ring_sites_ < r.m) {
      ring.set_site(ring_sites_, sites.entry(ring_sites_));
      ++ring_sites_;
    }
  }
  recorder::RecordData d;
  d.name = r.name;
  d.kind = r.kind;
  d.dtype = r.dtype;
  d.state = state;
  d.flags = 0;
  if (r.flags & OpRecord::kEndOnly) {
    d.flags |= recorder::kRecEndOnly;
  } else if ((r.flags & OpRecord::kHasPair) && p.gpu_start_ns != 0) {
    d.flags |= recorder::kRecTimed;
  }
  if (r.name == static_cast<uint16_t>(proto::OpName::kGroup)) d.flags |= recorder::kRecGroup;
  d.red_op = r.red_op;
  d.device = r.device;
  d.peer = r.peer;
  d.nranks = r.nranks;
  d.group_size = r.group_size;
  d.stream = r.stream;
  d.comm_hash = r.comm_hash;
  d.seq = r.seq;
  d.count = r.count;
  d.bytes = r.bytes;
  d.flops = r.flops;
  d.m = r.m;
  d.n = r.n;
  d.k = r.k;
  d.batch = r.batch;
  d.gemm_ops = r.gemm_ops;
  d.launch_ns = r.launch_ns;
  d.ready_ns = p.started_ns;
  d.gpu_start_ns = p.gpu_start_ns;
  d.gpu_end_ns = p.gpu_end_ns;
  if (p.ring_pos == kNoRingPos) {
    p.ring_pos = ring.append(d);
  } else {
    ring.update(p.ring_pos, d);
  }
}

void Poller::map_gpu_times(Pending& p, cudaEvent_t start, cudaEvent_t end, uint64_t duration_ns,
                           uint64_t seen_ns) {
  if (!state_->ring.ok()) return;  // only the flight recorder shows GPU times
  if (bench_part_off(BenchPart::kGpuClock)) return;
  GpuClock::Observation o;
  o.start = start;
  o.launch_ns = p.rec.launch_ns;
  o.token = p.rec.pair_index;
  o.end = end;
  o.end_after_start_ns = duration_ns;
  o.seen_ns = seen_ns;
  const GpuClock::Mapped m = gpu_clock_.observe(p.rec.device, o);
  p.gpu_start_ns = m.start_ns;
  p.gpu_end_ns = m.start_ns != 0 ? m.end_ns : 0;
  p.keep_pair = m.keep == p.rec.pair_index;
  if (m.give_back != GpuClock::kNoToken) {
    if (EventPool* pool = state_->pools.peek(p.rec.device)) pool->give_back(m.give_back);
  }
}

recorder::RecordData Poller::host_record(uint16_t op_name, uint64_t start_ns, uint64_t end_ns) {
  recorder::RecordData d;
  d.name = op_name;
  d.kind = static_cast<uint8_t>(proto::OpKind::kRange);
  d.state = static_cast<uint8_t>(recorder::OpState::kCompleted);
  d.flags = recorder::kRecHost;
  d.device = -1;
  d.launch_ns = start_ns;
  d.host_start_ns = start_ns;
  d.host_end_ns = end_ns;
  return d;
}

void Poller::sample_launches(uint64_t now_ns, bool force) {
  recorder::RingWriter& ring = state_->ring;
  if (!ring.ok()) return;        // no recorder: the counter is on the page anyway
  if (launch_sample_ns_ == 0) {  // the first pass: the first interval starts
    launch_sample_ns_ = now_ns;
    blocked_sampled_ns_ = HostBlocked::total_ns();
    return;
  }
  if (!force && now_ns - launch_sample_ns_ < kLaunchSampleNs) return;
  // Samples add up to the counters: the first one holds what was launched
  // before the first pass too. A host that waited the whole interval in a
  // synchronisation launched nothing and still has its sample.
  const uint64_t launches = PerThreadCounter::sum();
  const uint64_t blocked = HostBlocked::total_ns();
  if (launches == launches_sampled_ && blocked == blocked_sampled_ns_) {
    launch_sample_ns_ = now_ns;
    return;
  }
  recorder::RecordData d =
      host_record(static_cast<uint16_t>(proto::OpName::kKernelLaunches), launch_sample_ns_, now_ns);
  d.flags |= recorder::kRecMeasured;
  d.count = launches - launches_sampled_;
  d.bytes = blocked - blocked_sampled_ns_;
  ring.append(d);
  launch_sample_ns_ = now_ns;
  launches_sampled_ = launches;
  blocked_sampled_ns_ = blocked;
}

}  // namespace xpu_timer::inject
