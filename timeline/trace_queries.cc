#include "timeline/trace_queries.h"

#include <gtest/gtest.h>

namespace xpu_timer::timeline::testing {

using nlohmann::json;

json trace_of(const std::vector<std::string>& dirs, std::vector<std::string>* warnings,
              TraceOptions options) {
  std::vector<DumpSource> sources;
  for (const std::string& d : dirs) sources.push_back(DumpSource{d, -1});
  LoadedDumps dumps;
  load_dumps(sources, &dumps);
  EXPECT_TRUE(dumps.warnings.empty()) << dumps.warnings[0];
  return build_trace(dumps, options, warnings);
}

std::vector<json> events_with(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == ph) out.push_back(e);
  }
  return out;
}

std::map<std::pair<int, int>, std::string> thread_names(const json& trace) {
  std::map<std::pair<int, int>, std::string> out;
  for (const json& e : events_with(trace, "M")) {
    if (e["name"] == "thread_name") out[{e["pid"], e["tid"]}] = e["args"]["name"];
  }
  return out;
}

std::map<int, std::string> process_names(const json& trace) {
  std::map<int, std::string> out;
  for (const json& e : events_with(trace, "M")) {
    if (e["name"] == "process_name") out[e["pid"]] = e["args"]["name"];
  }
  return out;
}

const json* enclosing(const std::vector<json>& slices, int pid, int tid, double ts) {
  for (const json& s : slices) {
    const double t0 = s["ts"], dur = s["dur"];
    if (s["pid"] == pid && s["tid"] == tid && t0 <= ts && ts <= t0 + dur) return &s;
  }
  return nullptr;
}

const json* slice_named(const std::vector<json>& slices, int pid, const std::string& name) {
  for (const json& s : slices) {
    if (s["pid"] == pid && s["name"] == name) return &s;
  }
  return nullptr;
}

}  // namespace xpu_timer::timeline::testing
