#include "supervisor/metrics/culprit_metrics.h"

#include <set>

#include "supervisor/metrics/metrics_exporter.h"

namespace xpu_timer::supervisor {
namespace {

void append_place_series(std::string* out, const char* family, int rank,
                         const std::vector<CodeFrame>& where, const std::string& job_name) {
  out->append(family).append("{rank=\"").append(std::to_string(rank));
  out->append("\",where=\"");
  append_escaped_label_value(out, where_phrase(where));
  out->append("\",job_name=\"");
  append_escaped_label_value(out, job_name);
  out->append("\"} 1\n");
}

}  // namespace

std::string culprit_metrics_text(const HangReport& report, const std::vector<RankRecord>& records,
                                 const std::string& job_name) {
  if (!report.hung && !report.stalled) return "";
  std::set<int> local_ranks;
  for (const RankRecord& r : records) local_ranks.insert(r.reg.rank);
  std::string out;
  size_t series = 0;
  for (const RankVerdict& v : report.ranks) {
    if (series == kMaxCulpritSeries) break;
    // The roots of the waits are the culprits (a stuck rank of a deadlock
    // too), never a rank that waits on them.
    const bool culprit = v.state == RankState::kMissing || v.state == RankState::kUnresponsive ||
                         v.state == RankState::kStalled || is_root_rank(report, v.rank);
    if (!culprit || v.where.empty() || local_ranks.count(v.rank) == 0) continue;
    if (series++ == 0) {
      out.append(
          "# HELP xpu_timer_hang_culprit_info Where a rank the verdict blames (missing, "
          "unresponsive, stalled) was when its stacks were taken: its innermost frame of the "
          "user's and that frame's caller. Present while the verdict stands.\n"
          "# TYPE xpu_timer_hang_culprit_info gauge\n");
    }
    append_place_series(&out, "xpu_timer_hang_culprit_info", v.rank, v.where, job_name);
  }
  return out;
}

std::string mismatch_culprit_metrics_text(const std::map<int, std::vector<CodeFrame>>& places,
                                          const std::string& job_name) {
  std::string out;
  size_t series = 0;
  for (const auto& [rank, where] : places) {
    if (series == kMaxCulpritSeries) break;
    if (where.empty()) continue;
    if (series++ == 0) {
      out.append(
          "# HELP xpu_timer_mismatch_culprit_info Where an odd rank of a collective mismatch "
          "was when the stacks of its latest mismatch were taken: its innermost frame of the "
          "user's and that frame's caller.\n"
          "# TYPE xpu_timer_mismatch_culprit_info gauge\n");
    }
    append_place_series(&out, "xpu_timer_mismatch_culprit_info", rank, where, job_name);
  }
  return out;
}

}  // namespace xpu_timer::supervisor
