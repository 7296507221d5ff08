#include "slow_replay/slow_replay_cli.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli_help.h"
#include "common/log.h"
#include "slow_replay/slow_replay.h"
#include "supervisor/analysis/slow_report_json.h"
#include "timeline/dump_loader.h"

namespace xpu_timer::slow_replay {
namespace {

constexpr FlagHelp kFlags[] = {
    {"--path", "DIR",
     "a flight-recorder dump folder of one node; repeat for several dumps of the same job, "
     "replayed as one stream in time order",
     "required", nullptr},
    {"--every", "",
     "print every verdict (one JSON object a line, with its time) instead of the last", "off",
     nullptr},
    {"--window", "S", "the analysis window in seconds, as the supervisor's --slow-window", "30",
     nullptr},
    {"--slim", "OUT",
     "instead of replaying, write the one --path's dumps to OUT with only the records the "
     "analysis reads (collectives, timed GEMMs and copies, GC and DataLoader pauses): a "
     "recording that replays the same, small enough to keep",
     "off", nullptr},
};

constexpr char kUsage[] =
    "usage: xpu_timer_slow_replay --path DIR [--path DIR ...] [--every] [--window S]\n"
    "       xpu_timer_slow_replay --path DIR --slim OUT\n";

void usage(FILE* to) {
  const std::string text =
      std::string(kUsage) +
      "Replays flight-recorder dumps (RRRRR-WWWWW.timeline files: POST /dump/timeline, a hang's\n"
      "or a crash's dump folder) through the supervisor's slow-rank analysis, taking a verdict\n"
      "every second of recorded time as the supervisor does live, and prints the last verdict as\n"
      "GET /slow serves it (with --every, each verdict on a line of its own, with \"t_unix_s\").\n"
      "The dumps must come from one node (one clock). A dump holds seconds of history, so its\n"
      "verdicts are those of the first seconds of a window.\n\nOptions:\n" +
      format_flag_help(kFlags, sizeof(kFlags) / sizeof(kFlags[0]));
  std::fputs(text.c_str(), to);
}

int usage_error(const std::string& what) {
  return xpu_timer::usage_error("xpu_timer_slow_replay", what);
}

}  // namespace

int run_slow_replay_cli(int argc, const char* const* argv) {
  std::vector<std::string> paths;
  std::string slim_out;
  bool every = false;
  supervisor::StragglerOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], v;
    const bool inline_value = split_inline_value(&arg, &v);
    if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return 0;
    }
    if (arg == "--every") {
      if (inline_value) return usage_error("--every takes no value");
      every = true;
      continue;
    }
    if (arg != "--path" && arg != "--window" && arg != "--slim") {
      return usage_error("unknown argument " + arg);
    }
    if (!inline_value) {
      if (i + 1 >= argc) return usage_error(arg + " needs a value");
      v = argv[++i];
    }
    if (arg == "--path") {
      paths.push_back(v);
    } else if (arg == "--slim") {
      if (v.empty()) return usage_error("--slim needs a folder");
      slim_out = v;
    } else {
      char* end = nullptr;
      const double w = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !std::isfinite(w) || w < 1 || w > 3600) {
        return usage_error("--window must be a number of seconds from 1 to 3600, not '" + v + "'");
      }
      options.window_s = w;
    }
  }
  if (paths.empty()) return usage_error("--path DIR is required");
  if (!slim_out.empty() && paths.size() != 1) return usage_error("--slim takes one --path");
  std::vector<timeline::LoadedDumps> dumps;
  size_t ranks = 0;
  for (const std::string& p : paths) {
    timeline::DumpSource src;
    std::string error;
    if (!timeline::parse_dump_source(p, &src, &error)) return usage_error(error);
    timeline::LoadedDumps d;
    timeline::load_dumps({src}, &d);
    for (const std::string& w : d.warnings) XPU_TIMER_LOG_WARN("%s", w.c_str());
    if (d.ranks.empty()) {
      XPU_TIMER_LOG_ERROR("%s: no readable flight-recorder dump (RRRRR-WWWWW.timeline) in it",
                          p.c_str());
      return 1;
    }
    ranks += d.ranks.size();
    dumps.push_back(std::move(d));
  }
  if (!slim_out.empty()) {
    std::string error;
    if (!write_slim_dumps(dumps.front(), slim_out, &error)) {
      XPU_TIMER_LOG_ERROR("%s", error.c_str());
      return 1;
    }
    return 0;
  }
  const ReplayResult r = replay(dumps, options);
  if (r.verdicts.empty()) {
    XPU_TIMER_LOG_ERROR("no record in %zu dump file(s) could be replayed", ranks);
    return 1;
  }
  if (every) {
    for (const ReplayVerdict& v : r.verdicts) {
      nlohmann::json j = supervisor::slow_report_json(v.report);
      j["t_unix_s"] = v.at_unix_s;
      std::printf("%s\n", j.dump().c_str());
    }
  } else {
    std::printf("%s\n", supervisor::slow_report_json(r.verdicts.back().report).dump(2).c_str());
  }
  return 0;
}

}  // namespace xpu_timer::slow_replay
