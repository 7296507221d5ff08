// What a stack dump of the local ranks produced, as shown in GET /hang and
// <dump-dir>/hang.json under "stacks", plus the names it uses. Pure values and
// functions: built by the StackDumper's threads, copied out under its mutex.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xpu_timer::supervisor {

// One rank's collection.
struct RankStackResult {
  int rank = 0;
  pid_t pid = 0;
  bool attached = false;            // the stack library stopped and read the process
  double stopped_ms = 0;            // how long the rank was stopped
  size_t threads = 0;               // threads in its stack file
  std::string process_state;        // "S (sleeping)"
  std::string file;                 // path of its .stacktrace; empty when none was written
  std::vector<std::string> errors;  // one line per problem (partial result)
};

struct StackDumpReport {
  std::string dir;     // <dump-dir>/stacks-<timestamp>
  std::string reason;  // "hang" or "request"
  bool in_progress = true;
  double started_at = 0;                     // unix seconds
  double collected_at = 0;                   // unix seconds, when every rank was done
  double collect_s = 0;                      // from the start to the last rank done
  double render_s = 0;                       // merging and writing the flame graphs
  std::vector<RankStackResult> ranks;        // sorted by rank
  std::vector<std::string> outputs;          // flame graph files written (paths)
  std::string render_error;                  // empty when the flame graphs were written
  std::vector<std::string> render_warnings;  // files the merge skipped or complained of
};

// {"dir":..,"reason":"hang","in_progress":false,"started_at":..,"collected_at":..,
//  "collect_s":0.8,"render_s":0.1,"max_stopped_ms":12.3,
//  "ranks":[{"rank":0,"pid":..,"attached":true,"stopped_ms":12.3,"threads":3,
//            "process_state":"S (sleeping)","file":"<dir>/00000-00004.stacktrace",
//            "errors":[]}],
//  "outputs":["<dir>/cpp_stack", ...],"render_error":null,"render_warnings":[]}
// While in progress only dir, reason, in_progress, started_at and the target
// ranks ({"rank","pid"}) are meaningful; the other keys are null.
nlohmann::json stack_dump_json(const StackDumpReport& report);

// "stacks-20261122-153012.123" for that unix time, in UTC: sorts by time, and
// several dumps in one run never collide (one runs at a time, >= 1 ms apart).
std::string stack_dump_folder_name(double unix_s);

// "stacks of 4 ranks in 0.8 s (max stop 12 ms): <dir>"
std::string stack_dump_summary(const StackDumpReport& report);

double max_stopped_ms(const StackDumpReport& report);

}  // namespace xpu_timer::supervisor
