// xpu_timer_stacktrace_viewer --path DIR [--out DIR] [--progress] [--threads N]
// Merges the `.stacktrace` files of a dump folder into rank-folded stacks and
// writes cpp_stack, py_stack, mixed_stack (folded text) and their .svg files,
// naming the hang when the supervisor's hang.json is found (hang_verdict.h).
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/cli_help.h"
#include "common/log.h"
#include "common/parse_number.h"
#include "flamegraph/dump_merger.h"
#include "flamegraph/flamegraph_files.h"
#include "flamegraph/hang_verdict.h"
#include "flamegraph/progress_bar.h"

namespace {

constexpr size_t kMaxWarningsShown = 20;

constexpr xpu_timer::FlagHelp kFlags[] = {
    {"--path", "DIR", "folder of the RRRRR-WWWWW.stacktrace files (and hang.json)", "required",
     nullptr},
    {"--out", "DIR", "folder the outputs are written to (created if missing)", "the --path DIR",
     nullptr},
    {"--progress", "", "progress bar on stderr", "on when stderr is a terminal", nullptr},
    {"--threads", "N", "decoding threads, 1 to 256", "2", nullptr},
};

const char kUsage[] =
    "usage: xpu_timer_stacktrace_viewer --path DIR [--out DIR] [--progress] "
    "[--threads N]\n";

std::string help_text() {
  return std::string(kUsage) +
         "Merges DIR/*.stacktrace into cpp_stack, py_stack, mixed_stack (folded stacks, frames\n"
         "func@source@stuck_ranks|leak_ranks) and their .svg flame graphs. When DIR holds the\n"
         "supervisor's hang.json (or DIR's parent does and names DIR), the graphs name the hang\n"
         "and mark the frames of the ranks it calls missing.\n\nOptions:\n" +
         xpu_timer::format_flag_help(kFlags, sizeof(kFlags) / sizeof(kFlags[0])) +
         "No environment variable is read.\n";
}

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "xpu_timer_stacktrace_viewer: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xpu_timer;
  set_log_tag("stacktrace_viewer");
  std::string path, out;
  flamegraph::MergeOptions options;
  options.progress = flamegraph::stderr_is_tty();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool inline_value = false;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      inline_value = true;
    }
    if (arg == "-h" || arg == "--help") {
      std::fputs(help_text().c_str(), stdout);
      return 0;
    }
    const FlagHelp* flag = nullptr;
    for (const FlagHelp& f : kFlags) {
      if (arg == f.name) flag = &f;
    }
    if (flag == nullptr) {
      usage_error(arg.rfind("-", 0) == 0 ? "unknown option '" + arg + "' (see --help)"
                                         : "unexpected argument '" + arg + "' (see --help)");
    }
    const bool wants_value = *flag->value != '\0';
    if (!wants_value && inline_value) usage_error(arg + " takes no value");
    if (wants_value && !inline_value) {
      if (i + 1 >= argc) usage_error(arg + " needs a value (" + flag->value + ")");
      value = argv[++i];
    }
    if (arg == "--path" || arg == "--out") {
      if (value.empty()) usage_error(arg + ": the folder name is empty");
      (arg == "--path" ? path : out) = value;
    } else if (arg == "--progress") {
      options.progress = true;
    } else if (arg == "--threads") {
      const std::optional<int64_t> n = parse_int(value, 1, 256);
      if (!n) usage_error("--threads: '" + value + "' is not a number of threads (1 to 256)");
      options.threads = static_cast<unsigned>(*n);
    }
  }
  if (path.empty()) usage_error("--path is required: the folder of .stacktrace files");
  if (out.empty()) out = path;
  if (::mkdir(out.c_str(), 0755) != 0 && errno != EEXIST) {
    XPU_TIMER_LOG_ERROR("cannot create output folder %s: %s", out.c_str(), std::strerror(errno));
    return 1;
  }

  const auto start = std::chrono::steady_clock::now();
  flamegraph::DumpMerge dump;
  std::string error;
  const bool merged = flamegraph::merge_dump(path, options, &dump, &error);
  for (size_t i = 0; i < dump.warnings.size() && i < kMaxWarningsShown; ++i) {
    XPU_TIMER_LOG_WARN("%s", dump.warnings[i].c_str());
  }
  if (dump.warnings.size() > kMaxWarningsShown) {
    XPU_TIMER_LOG_WARN("... and %zu more problem(s)", dump.warnings.size() - kMaxWarningsShown);
  }
  if (!merged) {
    XPU_TIMER_LOG_ERROR("%s", error.c_str());
    return 1;
  }
  std::string warning;
  const std::optional<flamegraph::HangVerdict> verdict =
      flamegraph::find_hang_verdict(path, &warning);
  if (!warning.empty()) XPU_TIMER_LOG_WARN("%s", warning.c_str());
  if (verdict) {
    XPU_TIMER_LOG_INFO("hang verdict from %s: %s", verdict->source.c_str(),
                       verdict->summary.c_str());
  }
  std::vector<std::string> written;
  if (!flamegraph::write_flamegraphs(dump.merged, out, &written, &error, verdict)) {
    XPU_TIMER_LOG_ERROR("%s", error.c_str());
    return 1;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  XPU_TIMER_LOG_INFO("merged %zu of %zu stack file(s), world size %u, in %.2f s", dump.files_merged,
                     dump.files_found, dump.merged.world_size, secs);
  for (const std::string& w : written) std::printf("%s\n", w.c_str());
  return 0;
}
