#include "supervisor/metrics/culprit_metrics.h"

#include <set>

#include "supervisor/metrics/metrics_exporter.h"

namespace xpu_timer::supervisor {

std::string culprit_metrics_text(const HangReport& report, const std::vector<RankRecord>& records,
                                 const std::string& job_name) {
  if (!report.hung && !report.stalled) return "";
  std::set<int> local_ranks;
  for (const RankRecord& r : records) local_ranks.insert(r.reg.rank);
  std::string out;
  size_t series = 0;
  for (const RankVerdict& v : report.ranks) {
    if (series == kMaxCulpritSeries) break;
    const bool culprit = v.state == RankState::kMissing || v.state == RankState::kUnresponsive ||
                         v.state == RankState::kStalled;
    if (!culprit || v.where.empty() || local_ranks.count(v.rank) == 0) continue;
    if (series++ == 0) {
      out.append(
          "# HELP xpu_timer_hang_culprit_info Where a rank the verdict blames (missing, "
          "unresponsive, stalled) was when its stacks were taken: its innermost frame of the "
          "user's and that frame's caller. Present while the verdict stands.\n"
          "# TYPE xpu_timer_hang_culprit_info gauge\n");
    }
    out.append("xpu_timer_hang_culprit_info{rank=\"").append(std::to_string(v.rank));
    out.append("\",where=\"");
    append_escaped_label_value(&out, where_phrase(v.where));
    out.append("\",job_name=\"");
    append_escaped_label_value(&out, job_name);
    out.append("\"} 1\n");
  }
  return out;
}

}  // namespace xpu_timer::supervisor
