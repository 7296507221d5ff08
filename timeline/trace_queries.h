// Test helpers for timeline/: a trace built from dump folders, and what the
// tests look up in it (events of one phase, track and process names, the
// slice at a time). Test-only.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "timeline/trace_builder.h"

namespace xpu_timer::timeline::testing {

// The trace of the dumps in `dirs`; the dumps must load without a warning.
nlohmann::json trace_of(const std::vector<std::string>& dirs, std::vector<std::string>* warnings,
                        TraceOptions options = {});
std::vector<nlohmann::json> events_with(const nlohmann::json& trace, const std::string& ph);
// (pid, tid) -> thread name, and pid -> process name.
std::map<std::pair<int, int>, std::string> thread_names(const nlohmann::json& trace);
std::map<int, std::string> process_names(const nlohmann::json& trace);
// The "X" slice on (pid, tid) that encloses `ts` (flow binding), or null.
const nlohmann::json* enclosing(const std::vector<nlohmann::json>& slices, int pid, int tid,
                                double ts);
const nlohmann::json* slice_named(const std::vector<nlohmann::json>& slices, int pid,
                                  const std::string& name);

}  // namespace xpu_timer::timeline::testing
