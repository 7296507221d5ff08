// xpu_timer_sim_launch --nproc N [--job-id ID] [--grace-s S] -- PROGRAM ARGS...
// A torchrun stand-in for one node of simulated GPUs (see rank_group.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "tests/simgpu/rank_group.h"

namespace {

void usage() {
  fprintf(stderr,
          "usage: xpu_timer_sim_launch --nproc N [--job-id ID] [--grace-s SECONDS] -- PROGRAM "
          "[ARGS...]\n"
          "  Runs N ranks of PROGRAM with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
          "  GROUP_RANK=0 and XPU_TIMER_SIM_JOB_ID set (ID: --job-id, else the inherited\n"
          "  XPU_TIMER_SIM_JOB_ID, else generated; letters, digits, '.', '_', '-').\n");
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

}  // namespace

int main(int argc, char** argv) {
  xpu_timer::simgpu::LaunchConfig config;
  config.nproc = 0;
  if (const char* grace = getenv("XPU_TIMER_SIM_GRACE_S")) config.grace_s = atof(grace);
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        fprintf(stderr, "xpu_timer_sim_launch: %s needs a value\n", name);
        exit(2);
      }
      return argv[++i];
    };
    if (arg == "--") {
      ++i;
      break;
    } else if (arg == "--nproc" || arg == "--nproc-per-node" || arg == "--nproc_per_node") {
      config.nproc = atoi(value(arg.c_str()));
    } else if (arg == "--job-id") {
      config.job_id = value("--job-id");
    } else if (arg == "--grace-s") {
      config.grace_s = atof(value("--grace-s"));
    } else if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    } else {
      fprintf(stderr, "xpu_timer_sim_launch: unknown option %s\n", arg.c_str());
      usage();
      return 2;
    }
  }
  for (; i < argc; ++i) config.command.emplace_back(argv[i]);
  if (config.nproc < 1 || config.nproc > 64 || config.command.empty()) {
    usage();
    return 2;
  }
  if (config.grace_s < 0) config.grace_s = 0;
  if (config.job_id.empty()) {
    const char* inherited = getenv("XPU_TIMER_SIM_JOB_ID");
    config.job_id = inherited != nullptr && *inherited != '\0' ? inherited : generated_job_id();
  }
  if (!valid_job_id(config.job_id)) {
    fprintf(stderr, "xpu_timer_sim_launch: invalid job id '%s'\n", config.job_id.c_str());
    return 2;
  }
  xpu_timer::simgpu::RankGroup group(config);
  if (!group.block_signals()) return 1;
  return group.run();
}
