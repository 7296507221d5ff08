#include "supervisor/incidents/stack_dump_report.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace xpu_timer::supervisor {

double max_stopped_ms(const StackDumpReport& report) {
  double m = 0;
  for (const RankStackResult& r : report.ranks) m = std::max(m, r.stopped_ms);
  return m;
}

nlohmann::json stack_dump_json(const StackDumpReport& report) {
  using nlohmann::json;
  json j;
  j["dir"] = report.dir;
  j["reason"] = report.reason;
  j["in_progress"] = report.in_progress;
  j["started_at"] = report.started_at;
  const bool done = !report.in_progress;
  j["collected_at"] = done ? json(report.collected_at) : json(nullptr);
  j["collect_s"] = done ? json(report.collect_s) : json(nullptr);
  j["render_s"] = done ? json(report.render_s) : json(nullptr);
  j["max_stopped_ms"] = done ? json(max_stopped_ms(report)) : json(nullptr);
  json ranks = json::array();
  for (const RankStackResult& r : report.ranks) {
    json o;
    o["rank"] = r.rank;
    o["pid"] = r.pid;
    if (done) {
      o["attached"] = r.attached;
      o["stopped_ms"] = r.stopped_ms;
      o["threads"] = r.threads;
      o["process_state"] = r.process_state;
      o["file"] = r.file.empty() ? json(nullptr) : json(r.file);
      o["errors"] = r.errors;
    }
    ranks.push_back(std::move(o));
  }
  j["ranks"] = std::move(ranks);
  j["outputs"] = done ? json(report.outputs) : json(nullptr);
  j["render_error"] =
      done && !report.render_error.empty() ? json(report.render_error) : json(nullptr);
  j["render_warnings"] = done ? json(report.render_warnings) : json(nullptr);
  return j;
}

std::string stack_dump_folder_name(double unix_s) {
  if (!(unix_s >= 0)) unix_s = 0;  // NaN or before 1970: still a valid name
  const time_t secs = static_cast<time_t>(std::floor(unix_s));
  int ms = static_cast<int>(std::lround((unix_s - static_cast<double>(secs)) * 1000.0));
  time_t shown = secs;
  if (ms >= 1000) {
    ms -= 1000;
    shown += 1;
  }
  struct tm tm_utc {};
  gmtime_r(&shown, &tm_utc);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "stacks-%04d%02d%02d-%02d%02d%02d.%03d", tm_utc.tm_year + 1900,
                tm_utc.tm_mon + 1, tm_utc.tm_mday, tm_utc.tm_hour, tm_utc.tm_min, tm_utc.tm_sec,
                ms);
  return buf;
}

std::string stack_dump_summary(const StackDumpReport& report) {
  char buf[128];
  std::snprintf(buf, sizeof(buf),
                "stacks of %zu rank%s in %.1f s (max stop %.0f ms): ", report.ranks.size(),
                report.ranks.size() == 1 ? "" : "s", report.collect_s, max_stopped_ms(report));
  return buf + report.dir;
}

}  // namespace xpu_timer::supervisor
