// xpu_timer_sim_launch --nproc N [--job-id ID] [--grace-s S] -- PROGRAM ARGS...
// A torchrun stand-in for one node of simulated GPUs (see rank_group.h).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "common/cli_help.h"
#include "tests/simgpu/rank_group.h"

namespace {

constexpr const char* kTag = "xpu_timer_sim_launch";

constexpr xpu_timer::FlagHelp kFlags[] = {
    {"--nproc", "N", "ranks to run, 1 to 64 (also --nproc-per-node, --nproc_per_node)", "required",
     nullptr},
    {"--job-id", "ID", "names the job's shared memory (letters, digits, '.', '_', '-')",
     "generated", "XPU_TIMER_SIM_JOB_ID"},
    {"--grace-s", "S", "seconds from SIGTERM to SIGKILL when the ranks are stopped", "5",
     "XPU_TIMER_SIM_GRACE_S"},
};

const char kUsage[] =
    "usage: xpu_timer_sim_launch --nproc N [--job-id ID] [--grace-s SECONDS] -- PROGRAM "
    "[ARGS...]\n";

std::string help_text() {
  return std::string(kUsage) +
         "A torchrun stand-in for one node of simulated GPUs: runs N ranks of PROGRAM with\n"
         "RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK=0 and XPU_TIMER_SIM_JOB_ID\n"
         "set, and exits as the first failing rank did.\n\nOptions:\n" +
         xpu_timer::format_flag_help(kFlags, sizeof(kFlags) / sizeof(kFlags[0]));
}

[[noreturn]] void usage_error(const std::string& message) {
  fprintf(stderr, "%s: %s\n%s", kTag, message.c_str(), kUsage);
  exit(2);
}

bool valid_job_id(const std::string& id) {
  if (id.empty() || id.size() > 100) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string generated_job_id() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  char buf[64];
  snprintf(buf, sizeof(buf), "sim%d-%lx", static_cast<int>(getpid()),
           static_cast<unsigned long>(ts.tv_nsec ^ (ts.tv_sec << 20)));
  return buf;
}

// Seconds >= 0 from a flag or variable; exits with a usage error otherwise.
double grace_seconds(const char* what, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !(v >= 0) || v > 3600) {
    usage_error(std::string(what) + ": '" + text + "' is not a number of seconds (0 to 3600)");
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  xpu_timer::simgpu::LaunchConfig config;
  config.nproc = 0;
  if (const char* grace = getenv("XPU_TIMER_SIM_GRACE_S"); grace != nullptr && *grace != '\0') {
    config.grace_s = grace_seconds("XPU_TIMER_SIM_GRACE_S", grace);
  }
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) usage_error(std::string(name) + " needs a value");
      return argv[++i];
    };
    if (arg == "--") {
      ++i;
      break;
    } else if (arg == "--nproc" || arg == "--nproc-per-node" || arg == "--nproc_per_node") {
      const std::string v = value(arg.c_str());
      char* end = nullptr;
      errno = 0;
      const long n = strtol(v.c_str(), &end, 10);
      if (v.empty() || errno != 0 || *end != '\0' || n < 1 || n > 64) {
        usage_error(arg + ": '" + v + "' is not a number of ranks (1 to 64)");
      }
      config.nproc = static_cast<int>(n);
    } else if (arg == "--job-id") {
      config.job_id = value("--job-id");
      if (!valid_job_id(config.job_id)) {
        usage_error("--job-id: '" + config.job_id +
                    "' is not a job id (1 to 100 letters, digits, '.', '_', '-')");
      }
    } else if (arg == "--grace-s") {
      config.grace_s = grace_seconds("--grace-s", value("--grace-s"));
    } else if (arg == "-h" || arg == "--help") {
      fputs(help_text().c_str(), stdout);
      return 0;
    } else {
      usage_error("unknown option '" + arg + "' (the program goes after --; see --help)");
    }
  }
  for (; i < argc; ++i) config.command.emplace_back(argv[i]);
  if (config.nproc == 0) usage_error("--nproc is required: how many ranks?");
  if (config.command.empty()) usage_error("no program to run (put it after --)");
  if (config.job_id.empty()) {
    const char* inherited = getenv("XPU_TIMER_SIM_JOB_ID");
    config.job_id = inherited != nullptr && *inherited != '\0' ? inherited : generated_job_id();
    if (!valid_job_id(config.job_id)) {
      usage_error("XPU_TIMER_SIM_JOB_ID: '" + config.job_id +
                  "' is not a job id (1 to 100 letters, digits, '.', '_', '-')");
    }
  }
  xpu_timer::simgpu::RankGroup group(config);
  if (!group.block_signals()) return 1;
  return group.run();
}
