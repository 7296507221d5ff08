#include "supervisor/analysis/slow_report_json.h"

#include "common/comm_names.h"
#include "common/op_names.h"

namespace xpu_timer::supervisor {

nlohmann::json straggler_json(const Straggler& s) {
  const SlowEvidence& e = s.evidence;
  nlohmann::json evidence = {
      {"arrival_late_s", e.arrival_late_s},
      {"launch_late_s", e.launch_late_s},
      {"queue_excess_s", e.queue_excess_s},
      {"transfer_s", e.transfer_s},
      {"peer_transfer_s", e.peer_transfer_s},
      {"gemm_ratio", e.gemm_shapes > 0 ? nlohmann::json(e.gemm_ratio) : nlohmann::json()},
      {"gemm_shapes", e.gemm_shapes},
      {"gemm_peer_spread", e.gemm_peer_spread},
      {"gc_s", e.gc_s},
      {"peer_gc_s", e.peer_gc_s},
      {"dataloader_s", e.loader_s},
      {"peer_dataloader_s", e.peer_loader_s},
      {"timed_ops", e.timed_ops},
      {"host_bound_ops", e.host_bound_ops},
      {"peer_host_bound_share", e.peer_host_bound_share},
      {"chains", e.chains},
      {"overlapped", e.overlapped},
      {"host_blocked_s",
       e.host_blocked_s >= 0 ? nlohmann::json(e.host_blocked_s) : nlohmann::json()},
      {"peer_host_blocked_s",
       e.peer_host_blocked_s >= 0 ? nlohmann::json(e.peer_host_blocked_s) : nlohmann::json()},
  };
  return {
      {"rank", s.rank},
      {"node", s.node >= 0 ? nlohmann::json(s.node) : nlohmann::json()},
      {"cause", slow_cause_name(s.cause)},
      {"late_share", s.late_share},
      {"median_late_s", s.median_late_s},
      {"wait_caused_s", s.wait_caused_s},
      {"impact", s.impact},
      {"comm", comm_hex(s.comm)},
      {"comm_name", s.comm_name.empty() ? nlohmann::json() : nlohmann::json(s.comm_name)},
      {"operation", op_name_str(static_cast<proto::OpName>(s.op))},
      {"collectives", s.collectives},
      {"evidence", std::move(evidence)},
      {"summary", s.summary},
  };
}

nlohmann::json slow_report_json(const SlowReport& report) {
  nlohmann::json stragglers = nlohmann::json::array();
  for (const Straggler& s : report.stragglers) stragglers.push_back(straggler_json(s));
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankLateness& r : report.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"collectives", r.collectives},
                     {"last", r.last},
                     {"late_share", r.collectives > 0 ? static_cast<double>(r.last) /
                                                            static_cast<double>(r.collectives)
                                                      : 0.0},
                     {"median_late_s", r.median_late_s},
                     {"wait_caused_s", r.wait_caused_s},
                     {"wait_caused_total_s", r.wait_caused_total_s}});
  }
  return {{"window_s", report.window_s},
          {"stragglers", std::move(stragglers)},
          {"summary", report.summary},
          {"ranks", std::move(ranks)},
          {"collectives_judged", report.collectives_judged},
          {"analysis_cpu_s", report.analysis_cpu_s}};
}

}  // namespace xpu_timer::supervisor
