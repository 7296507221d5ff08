// The Poller's flight-recorder writes (common/recorder_ring.h): an
// operation's record as it is appended and rewritten in place. Poller thread.
#include "common/recorder_ring.h"
#include "inject/call_sites.h"
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

}  // namespace xpu_timer::inject
