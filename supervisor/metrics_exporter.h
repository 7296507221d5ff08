// Prometheus text exposition (format 0.0.4) of every rank's status page.
// One MetricsWriter per scrape, on the HTTP thread that serves it: ranks are
// added one at a time (so only one page copy is alive) and each family's
// lines are appended to its own buffer, then concatenated once.
//
// Families (base units; labels rank, local_rank, host, plus op, kind, dtype,
// size_bucket and, for NCCL, nranks on the per-operation families):
//   xpu_timer_rank_up, xpu_timer_hang, xpu_timer_inflight_operations,
//   xpu_timer_heartbeat_age_seconds, xpu_timer_dropped_records_total,
//   xpu_timer_skipped_capture_total, xpu_timer_hook_errors_total,
//   xpu_timer_operations_total, xpu_timer_operation_latency_seconds (histogram),
//   xpu_timer_nccl_bytes_total, xpu_timer_gemm_flops_total, xpu_timer_job_hung.
#pragma once

#include <array>
#include <string>

#include "common/protocol.h"

namespace xpu_timer::supervisor {

struct RankMetricsInput {
  int rank = 0;
  int local_rank = 0;
  std::string host;
  bool up = false;     // process alive
  bool stuck = false;  // its state in the latest hang report
  double heartbeat_age_s = 0;
  const proto::StatusPage* page = nullptr;  // a private copy; null if unreadable
};

class MetricsWriter {
 public:
  MetricsWriter();
  void add_rank(const RankMetricsInput& in);
  // Appends the job-level families and returns the whole exposition.
  std::string finish(bool job_hung);

 private:
  enum Family {
    kRankUp,
    kHang,
    kInflight,
    kHeartbeatAge,
    kDropped,
    kSkipped,
    kHookErrors,
    kOperations,
    kLatency,
    kNcclBytes,
    kGemmFlops,
    kFamilyCount
  };
  std::array<std::string, kFamilyCount> body_;
};

// Label value escaping of the text format: \ " and newline.
void append_escaped_label_value(std::string* out, const std::string& value);
// ns as seconds with all nine decimals, exactly ("12.000000345").
void append_ns_as_seconds(std::string* out, uint64_t ns);

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace xpu_timer::supervisor
