#include "supervisor/analysis/straggler_feed.h"

#include "common/op_names.h"

namespace xpu_timer::supervisor {

void feed_straggler_record(StragglerAnalyzer* analyzer, int rank, const recorder::RecordData& d,
                           uint64_t now_ns) {
  using recorder::OpState;
  const auto kind = static_cast<proto::OpKind>(d.kind);
  const bool completed = d.state == static_cast<uint8_t>(OpState::kCompleted);
  const bool timed = completed && recorder::has_timed_gpu_span(d);
  if (kind == proto::OpKind::kNccl && completed && d.gpu_start_ns != 0 && d.gpu_end_ns != 0) {
    CollectiveArrival a;
    a.rank = rank;
    a.comm = d.comm_hash;
    a.seq = d.seq;
    a.name = d.name;
    a.launch_ns = d.launch_ns;
    a.arrival_ns = d.gpu_start_ns;
    a.end_ns = d.gpu_end_ns;
    analyzer->add_collective(a, now_ns);
  } else if (kind == proto::OpKind::kGemm && timed) {
    GemmShape shape{d.name, d.dtype, d.m, d.n, d.k, d.batch};
    analyzer->add_gemm(rank, shape, d.gpu_end_ns - d.gpu_start_ns, d.gpu_end_ns);
    analyzer->add_timed_op(rank, d.launch_ns, d.gpu_start_ns, d.gpu_end_ns);
  } else if (kind == proto::OpKind::kMemcpy && timed) {
    analyzer->add_timed_op(rank, d.launch_ns, d.gpu_start_ns, d.gpu_end_ns);
  } else if (kind == proto::OpKind::kRange && d.host_end_ns > d.host_start_ns &&
             (d.name == static_cast<uint16_t>(proto::OpName::kGcPause) ||
              d.name == static_cast<uint16_t>(proto::OpName::kLoaderWait))) {
    analyzer->add_host_pause(rank, d.name == static_cast<uint16_t>(proto::OpName::kLoaderWait),
                             d.host_end_ns - d.host_start_ns, d.host_end_ns);
  }
}

}  // namespace xpu_timer::supervisor
