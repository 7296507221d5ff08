#include "supervisor/analysis/straggler_feed.h"

#include "common/op_names.h"

namespace xpu_timer::supervisor {

bool straggler_feed_reads(const recorder::RecordData& d) {
  const bool completed = d.state == static_cast<uint8_t>(recorder::OpState::kCompleted);
  switch (static_cast<proto::OpKind>(d.kind)) {
    case proto::OpKind::kNccl:
      return completed && d.gpu_start_ns != 0 && d.gpu_end_ns != 0;
    case proto::OpKind::kGemm:
    case proto::OpKind::kMemcpy:
      return completed && recorder::has_timed_gpu_span(d);
    case proto::OpKind::kRange:
      return d.host_end_ns > d.host_start_ns &&
             (d.name == static_cast<uint16_t>(proto::OpName::kGcPause) ||
              d.name == static_cast<uint16_t>(proto::OpName::kLoaderWait) ||
              (d.name == static_cast<uint16_t>(proto::OpName::kKernelLaunches) &&
               (d.flags & recorder::kRecMeasured) != 0));
    default:
      return false;
  }
}

void feed_straggler_record(StragglerAnalyzer* analyzer, int rank, const recorder::RecordData& d,
                           uint64_t now_ns) {
  if (!straggler_feed_reads(d)) return;
  switch (static_cast<proto::OpKind>(d.kind)) {
    case proto::OpKind::kNccl: {
      CollectiveArrival a;
      a.rank = rank;
      a.comm = d.comm_hash;
      a.seq = d.seq;
      a.name = d.name;
      a.launch_ns = d.launch_ns;
      a.arrival_ns = d.gpu_start_ns;
      a.end_ns = d.gpu_end_ns;
      analyzer->add_collective(a, now_ns);
      break;
    }
    case proto::OpKind::kGemm:
      analyzer->add_gemm(rank, GemmShape{d.name, d.dtype, d.m, d.n, d.k, d.batch},
                         d.gpu_end_ns - d.gpu_start_ns, d.gpu_end_ns);
      analyzer->add_timed_op(rank, d.launch_ns, d.gpu_start_ns, d.gpu_end_ns);
      break;
    case proto::OpKind::kMemcpy:
      analyzer->add_timed_op(rank, d.launch_ns, d.gpu_start_ns, d.gpu_end_ns);
      break;
    case proto::OpKind::kRange:
      if (d.name == static_cast<uint16_t>(proto::OpName::kKernelLaunches)) {
        analyzer->add_host_blocked(rank, d.bytes, d.host_start_ns, d.host_end_ns);
        break;
      }
      analyzer->add_host_pause(rank, d.name == static_cast<uint16_t>(proto::OpName::kLoaderWait),
                               d.host_end_ns - d.host_start_ns, d.host_end_ns);
      break;
    default:
      break;
  }
}

}  // namespace xpu_timer::supervisor
