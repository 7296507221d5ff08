#include "replay/replay_cli.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/cli_help.h"
#include "common/log.h"
#include "common/parse_number.h"
#include "replay/gemm_groups.h"
#include "replay/gemm_runner.h"
#include "replay/replay_report.h"
#include "timeline/dump_loader.h"
#include "timeline/trace_conversion.h"

namespace xpu_timer::replay {
namespace {

constexpr FlagHelp kFlags[] = {
    {"--path", "DIR", "a flight-recorder dump folder (or DIR:RANK for one rank)", "required",
     nullptr},
    {"--json", "FILE", "also write the table as JSON", "none", nullptr},
    {"--device", "N", "the CUDA device to replay on", "0", nullptr},
    {"--warmup", "W", "calls before the timed ones, per group", "10", nullptr},
    {"--reps", "R", "timed calls per group (the median is reported)", "50", nullptr},
    {"--lib-dir", "DIR",
     "where libcudart, libcublas and libcublasLt are (else the loader's search path)", "none",
     nullptr},
    {"--max-gib", "G", "skip a group whose operands need more GiB of GPU memory", "8", nullptr},
};

constexpr char kUsage[] =
    "usage: xpu_timer_gemm_replay --path DIR [--json FILE] [--device N] [--warmup W] [--reps R]\n"
    "                             [--lib-dir DIR] [--max-gib G]\n";

void usage(FILE* to) {
  const std::string text =
      std::string(kUsage) +
      "Groups the GEMMs of a flight-recorder dump (RRRRR-WWWWW.timeline files, see\n"
      "xpu_timer_gen_trace_timeline) by API, dtype, transposes, m, n, k and batch, replays each\n"
      "group on this GPU with cuBLAS/cuBLASLt and prints, largest time in the job first: calls\n"
      "in the dump, how many were timed, the job's time (sum and median per call, timed calls "
      "only),\n"
      "this GPU's time per call now, both as TFLOP/s, and SLOWER where the job took more than\n"
      "15% longer per call than the replay. Leading dimensions are the tightest ones (the dump\n"
      "has none); a dump written before transposes were recorded is replayed as NN (TN for\n"
      "cuBLASLt), and the row says so.\n\nOptions:\n" +
      format_flag_help(kFlags, sizeof(kFlags) / sizeof(kFlags[0])) +
      "No environment variable is read (the CUDA libraries honour LD_LIBRARY_PATH).\n";
  std::fputs(text.c_str(), to);
}

int usage_error(const std::string& what) {
  return xpu_timer::usage_error("xpu_timer_gemm_replay", what);
}

bool to_int(const std::string& s, int lo, int hi, int* out) {
  const std::optional<int64_t> v = parse_int(s, lo, hi);
  if (v) *out = static_cast<int>(*v);
  return v.has_value();
}

struct Args {
  std::string path, json;
  ReplayOptions options;
  bool help = false;
};

bool parse_args(int argc, const char* const* argv, Args* a, int* status) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], v;
    const bool inline_value = split_inline_value(&arg, &v);
    if (arg == "-h" || arg == "--help") {
      a->help = true;
      continue;
    }
    bool known = false;
    for (const FlagHelp& f : kFlags) known = known || arg == f.name;
    if (!known) return (*status = usage_error("unknown argument '" + arg + "'")), false;
    if (!inline_value) {
      if (i + 1 >= argc) return (*status = usage_error(arg + " needs a value")), false;
      v = argv[++i];
    }
    if (v.empty()) return (*status = usage_error(arg + " needs a value")), false;
    bool ok = true;
    if (arg == "--path") {
      ok = a->path.empty();
      a->path = v;
    } else if (arg == "--json") {
      a->json = v;
    } else if (arg == "--device") {
      ok = to_int(v, 0, 1023, &a->options.device);
    } else if (arg == "--warmup") {
      ok = to_int(v, 0, 100000, &a->options.warmup);
    } else if (arg == "--reps") {
      ok = to_int(v, 1, 100000, &a->options.reps);
    } else if (arg == "--lib-dir") {
      a->options.lib_dir = v;
    } else if (arg == "--max-gib") {
      char* end = nullptr;
      a->options.max_gib = std::strtod(v.c_str(), &end);
      ok = *end == '\0' && a->options.max_gib > 0 && a->options.max_gib < 1e6;
    }
    if (!ok) return (*status = usage_error(arg + ": '" + v + "' is not valid")), false;
  }
  if (!a->help && a->path.empty()) return (*status = usage_error("--path DIR is required")), false;
  return true;
}

}  // namespace

int run_replay_cli(int argc, const char* const* argv) {
  Args a;
  int status = 0;
  if (!parse_args(argc, argv, &a, &status)) return status;
  if (a.help) {
    usage(stdout);
    return 0;
  }
  timeline::DumpSource source;
  std::string error;
  if (!timeline::parse_dump_source(a.path, &source, &error)) return usage_error("--path: " + error);
  timeline::LoadedDumps dumps;
  timeline::load_dumps({source}, &dumps);
  for (const std::string& w : dumps.warnings) XPU_TIMER_LOG_WARN("%s", w.c_str());
  if (dumps.ranks.empty()) {
    XPU_TIMER_LOG_ERROR("no usable flight-recorder dump in %s (%zu .timeline file(s) seen)",
                        a.path.c_str(), dumps.files_found);
    return 1;
  }
  ReplayReport report;
  report.source = a.path;
  report.ranks = dumps.ranks.size();
  report.warmup = a.options.warmup;
  report.reps = a.options.reps;
  const std::vector<GemmGroup> groups = group_gemms(dumps);
  std::unique_ptr<GemmRunner> runner;
  if (!groups.empty()) {
    runner = GemmRunner::create(a.options, &error);
    if (runner == nullptr) {
      XPU_TIMER_LOG_ERROR("cannot replay on this machine: %s", error.c_str());
      return 1;
    }
    report.libraries = runner->api().cublas_path + ", " + runner->api().cublaslt_path;
  }
  report.device = std::to_string(a.options.device);
  if (const std::string name = device_name(a.options.device); !name.empty()) {
    report.device += " (" + name + ")";
  }
  for (const GemmGroup& g : groups) report.rows.push_back({g, runner->run(g.key)});
  std::fputs(report_table(report).c_str(), stdout);
  if (!a.json.empty()) {
    const std::string text =
        report_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    if (!timeline::write_file_whole(a.json, text, &error)) {
      XPU_TIMER_LOG_ERROR("%s", error.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace xpu_timer::replay
