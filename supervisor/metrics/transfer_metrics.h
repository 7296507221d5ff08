// The link transfer meter's report (analysis/link_transfer.h) as Prometheus
// families, appended to GET /metrics (docs/metrics.md "Link bandwidth"):
//   xpu_timer_nccl_transfer_bus_bandwidth_bytes_per_second  gauge, per rank
//       and operation key: bus bandwidth after the last member arrived
//   xpu_timer_nccl_wait_seconds_total      counter, per rank and communicator
//   xpu_timer_nccl_transfer_seconds_total  counter, per rank and communicator
//   xpu_timer_nccl_transfer_collectives_total  counter, by outcome (measured
//       or why skipped)
// Pure text rendering; any thread.
#pragma once

#include <string>

#include "supervisor/analysis/link_transfer.h"

namespace xpu_timer::supervisor {

std::string transfer_metrics_text(const TransferReport& report, const std::string& job_name);

}  // namespace xpu_timer::supervisor
