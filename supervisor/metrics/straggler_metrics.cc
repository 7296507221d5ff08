#include "supervisor/metrics/straggler_metrics.h"

#include <cstdio>

#include "supervisor/metrics/metrics_exporter.h"
#include "supervisor/metrics/node_histograms.h"

namespace xpu_timer::supervisor {
namespace {

void sample(std::string* out, const char* name, const std::string& labels, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  out->append(name).append("{").append(labels).append("} ").append(buf).append("\n");
}

}  // namespace

std::string straggler_metrics_text(const SlowReport& report, const std::string& job_name) {
  std::string job;
  job.append("job_name=\"");
  append_escaped_label_value(&job, job_name);
  job.push_back('"');
  auto rank_labels = [&](int rank) { return "rank=\"" + std::to_string(rank) + "\"," + job; };
  std::string out;
  if (!report.ranks.empty()) {
    append_family_header(
        &out, "xpu_timer_rank_late_share", "gauge",
        "Share of the rank's collectives in the straggler window at which it arrived last.");
    for (const RankLateness& r : report.ranks) {
      sample(&out, "xpu_timer_rank_late_share", rank_labels(r.rank),
             r.collectives > 0 ? static_cast<double>(r.last) / static_cast<double>(r.collectives)
                               : 0.0);
    }
    append_family_header(
        &out, "xpu_timer_rank_late_seconds", "gauge",
        "The rank's median margin over the next latest member when it arrived last (window).");
    for (const RankLateness& r : report.ranks) {
      sample(&out, "xpu_timer_rank_late_seconds", rank_labels(r.rank), r.median_late_s);
    }
    append_family_header(
        &out, "xpu_timer_rank_wait_caused_seconds_total", "counter",
        "Rank-seconds its peers waited for this rank at collectives it arrived last at.");
    for (const RankLateness& r : report.ranks) {
      sample(&out, "xpu_timer_rank_wait_caused_seconds_total", rank_labels(r.rank),
             r.wait_caused_total_s);
    }
  }
  if (!report.stragglers.empty()) {
    append_family_header(
        &out, "xpu_timer_straggler", "gauge",
        "1 for each rank named a straggler, labelled with its cause (gpu, host, link, unknown) "
        "and the communicator it costs most on (comm_name: its program's name, \"\" unknown).");
    for (const Straggler& s : report.stragglers) {
      std::string labels = rank_labels(s.rank);
      labels += ",node=\"" + (s.node >= 0 ? std::to_string(s.node) : std::string()) + "\"";
      labels += ",cause=\"" + std::string(slow_cause_name(s.cause)) + "\"";
      labels += ",comm_name=\"";
      append_escaped_label_value(&labels, s.comm_name);
      labels += "\"";
      sample(&out, "xpu_timer_straggler", labels, 1);
    }
  }
  append_family_header(&out, "xpu_timer_stragglers", "gauge", "Ranks named stragglers now.");
  sample(&out, "xpu_timer_stragglers", job, static_cast<double>(report.stragglers.size()));
  return out;
}

}  // namespace xpu_timer::supervisor
