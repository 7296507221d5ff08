#include "timeline/timeline_cli.h"

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli_help.h"
#include "common/log.h"
#include "timeline/diff_trace.h"
#include "timeline/dump_loader.h"
#include "timeline/timeline_diff.h"
#include "timeline/trace_builder.h"
#include "timeline/trace_conversion.h"

namespace xpu_timer::timeline {
namespace {

constexpr size_t kMaxWarningsShown = 20;

constexpr FlagHelp kFlags[] = {
    {"--path", "DIR", "a dump folder; repeat for several nodes (unless --diff)", "required",
     nullptr},
    {"--output", "FILE", "the trace file (with --diff: the diff as JSON)",
     "DIR/timeline.json of the first --path; none with --diff", nullptr},
    {"--groups", "SPEC", "label ranks with their tp4-cp2-dp4-pp2 coordinates", "none", nullptr},
    {"--sampled-out-slices", "",
     "a zero-length slice per sampled-out launch instead of a launch counter per stream", "off",
     nullptr},
    {"--diff", "A B", "compare two timelines (dump folders or DIR:RANK)", "off", nullptr},
    {"--trace", "FILE", "with --diff: one step of A and of B side by side, as a trace", "none",
     nullptr},
};

constexpr char kUsage[] =
    "usage: xpu_timer_gen_trace_timeline --path DIR [--path DIR2 ...] [--output FILE]\n"
    "                                    [--groups tp4-cp2-dp4-pp2] [--sampled-out-slices]\n"
    "       xpu_timer_gen_trace_timeline --diff A B [--output FILE] [--trace FILE]\n";

void usage(FILE* to) {
  const std::string text =
      std::string(kUsage) +
      "Converts the flight-recorder dumps (RRRRR-WWWWW.timeline) of a dump folder into a Chrome\n"
      "Trace Event JSON file for Perfetto UI (ui.perfetto.dev), chrome://tracing or speedscope:\n"
      "one process per rank, named with its part in a hang and sorted culprits first, one track\n"
      "per GPU stream, slices named by operation (a GEMM with its dtype and shape) with each\n"
      "call's details in its args, each collective joined across its ranks by flow arrows, the\n"
      "operations pending at the dump drawn to the end (STUCK), the hang verdict of the folder's\n"
      "hang.json and each missing rank's last completed operation marked. Sampled-out\n"
      "operations (launched, not timed) are counted per stream. Ranks of several folders\n"
      "(nodes) are aligned on wall-clock time.\n"
      "--groups: the first dimension varies fastest, as in Megatron's order tp-cp-ep-dp-pp;\n"
      "ignored, with a warning, when its product is not the job's world size.\n"
      "--diff: what got slower. Per operation kind and shape (op, dtype, bytes or m/n/k/batch),\n"
      "calls, mean GPU latency and time (calls x mean) per rank and training step of A and B,\n"
      "and the ratio of the means, sorted by the change of time per step; without steps in\n"
      "every rank's dump, per second of the dump instead. The table goes to stdout.\n\nOptions:\n" +
      format_flag_help(kFlags, sizeof(kFlags) / sizeof(kFlags[0])) +
      "No environment variable is read.\n";
  std::fputs(text.c_str(), to);
}

int usage_error(const std::string& what) {
  return xpu_timer::usage_error("xpu_timer_gen_trace_timeline", what);
}

void show_warnings(const std::vector<std::string>& warnings) {
  for (size_t i = 0; i < warnings.size() && i < kMaxWarningsShown; ++i) {
    XPU_TIMER_LOG_WARN("%s", warnings[i].c_str());
  }
  if (warnings.size() > kMaxWarningsShown) {
    XPU_TIMER_LOG_WARN("... and %zu more problem(s)", warnings.size() - kMaxWarningsShown);
  }
}

bool write_text(const std::string& path, const std::string& text) {
  std::string error;
  if (write_file_whole(path, text, &error)) return true;
  XPU_TIMER_LOG_ERROR("%s", error.c_str());
  return false;
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct Args {
  std::vector<std::string> paths;
  std::string output, groups, diff_a, diff_b, trace;
  bool diff = false, groups_set = false, sampled_out_slices = false, help = false;
};

// False with the usage error already printed into *status.
bool parse_args(int argc, const char* const* argv, Args* a, int* status) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    const size_t eq = s.find('=');
    if (s.rfind("--", 0) == 0 && eq != std::string::npos) {  // --flag=value
      args.push_back(s.substr(0, eq));
      args.push_back(s.substr(eq + 1));
    } else {
      args.push_back(std::move(s));
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&](const char* flag, std::string* out) {
      if (i + 1 >= args.size() || args[i + 1].empty()) {
        *status = usage_error(std::string(flag) + " needs a value");
        return false;
      }
      *out = args[++i];
      return true;
    };
    std::string v;
    if (arg == "-h" || arg == "--help") {
      a->help = true;
    } else if (arg == "--path") {
      if (!value("--path", &v)) return false;
      a->paths.push_back(v);
    } else if (arg == "--output") {
      if (!a->output.empty()) return (*status = usage_error("--output given twice")), false;
      if (!value("--output", &a->output)) return false;
    } else if (arg == "--groups") {
      if (a->groups_set) return (*status = usage_error("--groups given twice")), false;
      if (!value("--groups", &a->groups)) return false;
      a->groups_set = true;
    } else if (arg == "--sampled-out-slices") {
      a->sampled_out_slices = true;
    } else if (arg == "--trace") {
      if (!a->trace.empty()) return (*status = usage_error("--trace given twice")), false;
      if (!value("--trace", &a->trace)) return false;
    } else if (arg == "--diff") {
      if (a->diff) return (*status = usage_error("--diff given twice")), false;
      if (i + 2 >= args.size() || args[i + 1].rfind("--", 0) == 0 ||
          args[i + 2].rfind("--", 0) == 0) {
        *status = usage_error("--diff needs two timelines: --diff A B");
        return false;
      }
      a->diff = true;
      a->diff_a = args[++i];
      a->diff_b = args[++i];
    } else {
      *status = usage_error("unknown argument '" + arg + "'");
      return false;
    }
  }
  if (a->help) return true;
  if (a->diff && !a->paths.empty()) {
    *status = usage_error("--diff compares its own two timelines; drop --path");
    return false;
  }
  if (a->diff && (a->groups_set || a->sampled_out_slices)) {
    *status = usage_error(std::string(a->groups_set ? "--groups" : "--sampled-out-slices") +
                          " applies to a trace, not to --diff");
    return false;
  }
  if (!a->diff && !a->trace.empty()) {
    *status = usage_error("--trace belongs to --diff (the trace of --path is --output)");
    return false;
  }
  if (!a->diff && a->paths.empty()) {
    *status = usage_error("--path DIR (or --diff A B) is required");
    return false;
  }
  return true;
}

int run_trace(const Args& a) {
  TraceOptions options;
  options.sampled_out_slices = a.sampled_out_slices;
  if (a.groups_set) {
    ParallelLayout layout;
    std::string error;
    if (!ParallelLayout::parse(a.groups, &layout, &error)) return usage_error("--groups: " + error);
    options.layout = std::move(layout);
  }
  std::vector<DumpSource> sources;
  for (const std::string& p : a.paths) sources.push_back(DumpSource{p, -1});
  LoadedDumps dumps;
  load_dumps(sources, &dumps);
  show_warnings(dumps.warnings);
  if (dumps.ranks.empty()) {
    XPU_TIMER_LOG_ERROR("no usable flight-recorder dump found (%zu .timeline file(s) seen)",
                        dumps.files_found);
    return 1;
  }
  const std::string path = a.output.empty() ? a.paths[0] + "/timeline.json" : a.output;
  std::vector<std::string> warnings;
  TraceSummary summary;
  std::string error;
  const bool written = write_trace_file(dumps, options, path, &summary, &warnings, &error);
  show_warnings(warnings);
  if (!written) {
    XPU_TIMER_LOG_ERROR("%s", error.c_str());
    return 1;
  }
  XPU_TIMER_LOG_INFO("%zu rank(s) from %zu dump file(s): %zu event(s), %zu collective flow(s)",
                     dumps.ranks.size(), dumps.files_found, summary.events, summary.flows);
  std::printf("%s\n", path.c_str());
  return 0;
}

int run_diff(const Args& a) {
  DumpSource sa, sb;
  std::string error;
  if (!parse_dump_source(a.diff_a, &sa, &error)) return usage_error("--diff A: " + error);
  if (!parse_dump_source(a.diff_b, &sb, &error)) return usage_error("--diff B: " + error);
  LoadedDumps da, db;
  load_dumps({sa}, &da);
  show_warnings(da.warnings);
  load_dumps({sb}, &db);
  show_warnings(db.warnings);
  for (const auto* side : {&da, &db}) {
    if (side->ranks.empty()) {
      XPU_TIMER_LOG_ERROR("no usable flight-recorder dump in %s",
                          (side == &da ? a.diff_a : a.diff_b).c_str());
      return 1;
    }
  }
  const TimelineDiff d = diff_timelines(da, a.diff_a, db, a.diff_b);
  std::fputs(diff_table(d).c_str(), stdout);
  if (!a.output.empty() && !write_text(a.output, json_text(diff_json(d)))) return 1;
  if (!a.trace.empty() && !write_text(a.trace, json_text(diff_trace(d)))) return 1;
  return 0;
}

}  // namespace

int run_timeline_cli(int argc, const char* const* argv) {
  Args a;
  int status = 0;
  if (!parse_args(argc, argv, &a, &status)) return status;
  if (a.help) {
    usage(stdout);
    return 0;
  }
  return a.diff ? run_diff(a) : run_trace(a);
}

}  // namespace xpu_timer::timeline
