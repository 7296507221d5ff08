// xpu_timer_sim_launch --nproc N [--nnodes K --node-rank R] [--job-id ID] [--grace-s S]
//                      -- PROGRAM ARGS...
// A torchrun stand-in for one node of simulated GPUs (see rank_group.h); K of
// them with the same job id make one job of K nodes (see launcher_nodes.h).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "common/cli_help.h"
#include "tests/simgpu/launcher_nodes.h"
#include "tests/simgpu/rank_group.h"
#include "tests/simgpu/rendezvous.h"

namespace {

constexpr const char* kTag = "xpu_timer_sim_launch";

constexpr xpu_timer::FlagHelp kFlags[] = {
    {"--nproc", "N", "ranks to run, 1 to 64 (also --nproc-per-node, --nproc_per_node)", "required",
     nullptr},
    {"--nnodes", "K",
     "nodes of the job, one launcher each, 1 to 1024; WORLD_SIZE is K * N, at most 1024", "1",
     nullptr},
    {"--node-rank", "R", "this launcher's node, 0 to K-1: GROUP_RANK (also --node_rank)", "0",
     nullptr},
    {"--job-id", "ID", "names the job's shared memory (letters, digits, '.', '_', '-')",
     "generated", "XPU_TIMER_SIM_JOB_ID"},
    {"--grace-s", "S", "seconds from SIGTERM to SIGKILL when the ranks are stopped", "5",
     "XPU_TIMER_SIM_GRACE_S"},
};

const char kUsage[] =
    "usage: xpu_timer_sim_launch --nproc N [--nnodes K --node-rank R] [--job-id ID]\n"
    "                            [--grace-s SECONDS] -- PROGRAM [ARGS...]\n";

std::string help_text() {
  return std::string(kUsage) +
         "A torchrun stand-in for simulated GPUs: runs N ranks of PROGRAM with RANK, LOCAL_RANK,\n"
         "WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK and XPU_TIMER_SIM_JOB_ID set, and exits as\n"
         "the first failing rank did. Alone it is the only node (GROUP_RANK=0).\n\n"
         "Several nodes on one machine: start K launchers, in any order, with the same --job-id\n"
         "(required), --nproc N and --nnodes K, and --node-rank 0 to K-1. Node R runs RANK R*N to\n"
         "R*N+N-1 of WORLD_SIZE K*N (LOCAL_WORLD_SIZE N, GROUP_RANK R), and the simulated NCCL\n"
         "joins all K*N ranks into one job. The last launcher to finish removes the job's\n"
         "shared memory.\n\nOptions:\n" +
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

// A whole number lo..hi from a flag; exits with a usage error otherwise.
int whole_number(const std::string& flag, const std::string& text, long lo, long hi,
                 const char* what) {
  char* end = nullptr;
  errno = 0;
  const long n = strtol(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || n < lo || n > hi) {
    usage_error(flag + ": '" + text + "' is not " + what + " (" + std::to_string(lo) + " to " +
                std::to_string(hi) + ")");
  }
  return static_cast<int>(n);
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
      config.nproc = whole_number(arg, value(arg.c_str()), 1, 64, "a number of ranks");
    } else if (arg == "--nnodes") {
      config.nnodes = whole_number(arg, value(arg.c_str()), 1, xpu_timer::simgpu::kMaxNodes,
                                   "a number of nodes");
    } else if (arg == "--node-rank" || arg == "--node_rank") {
      config.node_rank =
          whole_number(arg, value(arg.c_str()), 0, xpu_timer::simgpu::kMaxNodes - 1, "a node rank");
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
  const std::string shape = "--nnodes " + std::to_string(config.nnodes);
  if (config.node_rank >= config.nnodes) {
    usage_error("--node-rank " + std::to_string(config.node_rank) + " is not below " + shape +
                " (node ranks are 0 to " + std::to_string(config.nnodes - 1) + ")");
  }
  if (config.nnodes * config.nproc > xpu_timer::simgpu::kMaxRanks) {
    usage_error(shape + " of --nproc " + std::to_string(config.nproc) + " makes " +
                std::to_string(config.nnodes * config.nproc) +
                " ranks; the simulated NCCL holds at most " +
                std::to_string(xpu_timer::simgpu::kMaxRanks));
  }
  if (config.nnodes > 1 && config.job_id.empty()) {
    const char* inherited = getenv("XPU_TIMER_SIM_JOB_ID");
    if (inherited == nullptr || *inherited == '\0') {
      usage_error(shape + " needs --job-id ID, the same for every node's launcher");
    }
  }
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
  // One node: this launcher owns the job's segments. Several: the last
  // launcher alive removes them (launcher_nodes.h).
  std::unique_ptr<xpu_timer::simgpu::LauncherNodes> nodes;
  if (config.nnodes > 1) {
    using xpu_timer::simgpu::LauncherNodes;
    LauncherNodes::JoinError error = LauncherNodes::JoinError::kNone;
    std::string message;
    nodes = LauncherNodes::join(config.job_id, config.nnodes, config.nproc, config.node_rank,
                                &error, &message);
    if (!nodes) {
      fprintf(stderr, "%s: %s\n", kTag, message.c_str());
      return error == LauncherNodes::JoinError::kConflict ? 2 : 1;
    }
  }
  const int code = group.run();
  if (nodes) {
    nodes->leave();
  } else {
    xpu_timer::simgpu::remove_job_segments(config.job_id);
  }
  return code;
}
