// xpu_timer_stacktrace_viewer --path DIR [--out DIR] [--progress] [--threads N]
// Merges the `.stacktrace` files of a dump folder into rank-folded stacks and
// writes cpp_stack, py_stack, mixed_stack (folded text) and their .svg files.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"
#include "flamegraph/dump_merger.h"
#include "flamegraph/flamegraph_files.h"
#include "flamegraph/progress_bar.h"

namespace {

constexpr size_t kMaxWarningsShown = 20;

void usage(FILE* to) {
  std::fprintf(to,
               "usage: xpu_timer_stacktrace_viewer --path DIR [--out DIR] [--progress] "
               "[--threads N]\n"
               "  Merges DIR/*.stacktrace into cpp_stack, py_stack, mixed_stack (folded\n"
               "  stacks, frames func@source@stuck_ranks|leak_ranks) and their .svg flame\n"
               "  graphs, written into --out (default DIR).\n"
               "  --progress  show a progress bar on stderr even when it is not a terminal\n"
               "  --threads N decoding threads (default 2)\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xpu_timer;
  set_log_tag("stacktrace_viewer");
  std::string path, out;
  flamegraph::MergeOptions options;
  options.progress = flamegraph::stderr_is_tty();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--path" && has_value) {
      path = argv[++i];
    } else if (arg == "--out" && has_value) {
      out = argv[++i];
    } else if (arg == "--progress") {
      options.progress = true;
    } else if (arg == "--threads" && has_value) {
      const int n = std::atoi(argv[++i]);
      if (n < 1 || n > 256) {
        std::fprintf(stderr, "--threads wants 1..256, got %s\n", argv[i]);
        return 2;
      }
      options.threads = static_cast<unsigned>(n);
    } else if (arg == "-h" || arg == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "unknown or incomplete argument: %s\n", arg.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (path.empty()) {
    usage(stderr);
    return 2;
  }
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
  std::vector<std::string> written;
  if (!flamegraph::write_flamegraphs(dump.merged, out, &written, &error)) {
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
