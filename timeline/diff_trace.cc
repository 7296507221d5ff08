#include "timeline/diff_trace.h"

namespace xpu_timer::timeline {

nlohmann::json diff_trace(const TimelineDiff& d) {
  using nlohmann::json;
  json events = json::array();
  const std::string track =
      std::string("one ") + (d.per_step ? "step" : "second") + " per rank, largest change first";
  for (int side = 0; side < 2; ++side) {
    const int pid = side + 1;
    const std::string& source = side == 0 ? d.a_source : d.b_source;
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", std::string(side == 0 ? "A: " : "B: ") + source}}}});
    events.push_back({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", pid},
                      {"tid", 1},
                      {"args", {{"name", track}}}});
    double ts_us = 0;
    for (const DiffRow& r : d.rows) {
      const DiffStats& s = side == 0 ? r.a : r.b;
      const double dur_us = s.unit_ns() / 1e3;
      if (dur_us <= 0) continue;
      json args = {{"calls", s.calls_per_unit},
                   {"mean_us", s.mean_ns() / 1e3},
                   {"change_us", r.change_ns() / 1e3}};
      args["ratio"] = r.ratio() > 0 ? json(r.ratio()) : json(nullptr);
      events.push_back({{"ph", "X"},
                        {"name", r.op + " " + r.dtype + " " + r.shape},
                        {"cat", "diff"},
                        {"pid", pid},
                        {"tid", 1},
                        {"ts", ts_us},
                        {"dur", dur_us},
                        {"args", std::move(args)}});
      ts_us += dur_us;
    }
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}};
}

}  // namespace xpu_timer::timeline
