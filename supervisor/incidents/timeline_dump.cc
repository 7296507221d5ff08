#include "supervisor/incidents/timeline_dump.h"

#include <unistd.h>

#include <exception>

#include "supervisor/incidents/dump_files.h"
#include "supervisor/incidents/stack_dump_report.h"
#include "timeline/timeline_cli.h"

namespace xpu_timer::supervisor {
namespace {

// "timeline-20261123-112233.456-hang", unique within the dump folder.
std::string folder_for(const std::string& dump_dir, const std::string& reason, double now_unix_s) {
  const std::string stamp = stack_dump_folder_name(now_unix_s).substr(sizeof("stacks-") - 1);
  std::string base = dump_dir + "/timeline-" + stamp + "-" + reason;
  std::string dir = base;
  for (int i = 2; ::access(dir.c_str(), F_OK) == 0 && i < 1000; ++i) {
    dir = base + "-" + std::to_string(i);
  }
  return dir;
}

}  // namespace

TimelineDumpResult dump_timelines(const std::vector<TimelineTarget>& targets,
                                  const std::string& dump_dir, const std::string& reason,
                                  const std::string& hang_json, double now_unix_s) {
  TimelineDumpResult result;
  try {
    result.dir = folder_for(dump_dir, reason, now_unix_s);
    std::string error;
    if (!make_directories(result.dir, &error)) {
      result.errors.push_back(error);
      return result;
    }
    for (const TimelineTarget& t : targets) {
      if (!t.ring) {
        result.errors.push_back("rank " + std::to_string(t.rank) + ": no flight recorder");
        continue;
      }
      recorder::RingSnapshot snap;
      if (!t.ring->read(&snap, &error)) {
        result.errors.push_back("rank " + std::to_string(t.rank) + ": " + error);
        continue;
      }
      const std::string path = result.dir + "/" + recorder::dump_file_name(t.rank, t.world_size);
      if (!recorder::write_ring_image(path, snap, &error)) {
        result.errors.push_back("rank " + std::to_string(t.rank) + ": " + error);
        continue;
      }
      result.ranks.push_back(t.rank);
      result.records += snap.records.size();
    }
    if (!hang_json.empty() && !write_file_atomically(result.dir + "/hang.json", hang_json, &error)) {
      result.errors.push_back(error);
    }
    result.ok = !result.ranks.empty();
    if (result.ok) {
      // The trace a user opens in Perfetto, converted right away (the same
      // code as xpu_timer_gen_trace_timeline; its problems are log lines).
      const std::string trace = result.dir + "/timeline.json";
      const char* argv[] = {"xpu_timer_gen_trace_timeline", "--path", result.dir.c_str(),
                            "--output", trace.c_str()};
      if (timeline::run_timeline_cli(5, argv) == 0) {
        result.trace = trace;
      } else {
        result.errors.push_back("the trace could not be converted; the .timeline files are there");
      }
    }
  } catch (const std::exception& e) {  // allocation failure: report, never throw
    result.errors.push_back(std::string("timeline dump failed: ") + e.what());
  }
  return result;
}

}  // namespace xpu_timer::supervisor
