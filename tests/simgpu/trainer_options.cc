#include "tests/simgpu/trainer_options.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/cli_help.h"

namespace xpu_timer::simgpu {
namespace {

bool to_long(const char* s, long* out) {
  errno = 0;
  char* end = nullptr;
  const long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return false;
  *out = v;
  return true;
}

bool to_int(const char* s, int* out) {
  long v = 0;
  if (!to_long(s, &v) || v < -2147483647L || v > 2147483647L) return false;
  *out = static_cast<int>(v);
  return true;
}

bool to_double(const char* s, double* out) {
  errno = 0;
  char* end = nullptr;
  const double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || v < 0) return false;
  *out = v;
  return true;
}

}  // namespace

namespace {

// The flags, their meanings and defaults (those of TrainerOptions) for --help.
constexpr FlagHelp kFlags[] = {
    {"--steps", "N", "training steps to run", "10", nullptr},
    {"--gemm", "M,N,K", "shape of every GEMM", "1024,1024,1024", nullptr},
    {"--gemm2", "M,N,K", "a second shape: each step also runs --gemms-per-step GEMMs of it", "none",
     nullptr},
    {"--gemm-api", "NAME|all", "cuBLAS/cuBLASLt entry point (all: rotate through them)", "gemmex",
     nullptr},
    {"--gemm-batch", "B", "batch of the strided-batched APIs", "2", nullptr},
    {"--gemms-per-step", "G", "GEMMs before each step's collective", "3", nullptr},
    {"--collective", "NAME",
     "allreduce|allgather|reducescatter|broadcast|reduce, or mixed (all five in turn)", "allreduce",
     nullptr},
    {"--bytes", "B", "bytes per collective", "1048576", nullptr},
    {"--hang-rank", "R", "this rank stops in stuck_in_host_code at --hang-step", "-1 (none)",
     nullptr},
    {"--hang-step", "S", "step at which --hang-rank hangs", "-1 (none)", nullptr},
    {"--hang-file", "PATH",
     "--hang-rank hangs at the first step that finds PATH (a benchmark's trigger)", "none",
     nullptr},
    {"--stall-step", "S", "every rank stops in stalled_in_host_code at step S (heartbeat on)",
     "-1 (none)", nullptr},
    {"--slow-rank", "R", "this rank sleeps --slow-ms before each collective", "-1 (none)", nullptr},
    {"--slow-ms", "T", "extra milliseconds of --slow-rank per step", "0", nullptr},
    {"--slow-gpu-rank", "R",
     "every kernel and GEMM of this rank takes --slow-gpu-factor times as long", "-1 (none)",
     "XPU_TIMER_SIM_SLOW_GPU_RANK"},
    {"--slow-gpu-factor", "F", "slowdown of --slow-gpu-rank's GPU (> 0)", "1.0",
     "XPU_TIMER_SIM_SLOW_GPU_FACTOR"},
    {"--slow-link-rank", "R",
     "this rank's collectives and sends/receives take --slow-link-factor times as long after the "
     "last arrival (its peers' do not)",
     "-1 (none)", "XPU_TIMER_SIM_SLOW_LINK_RANK"},
    {"--slow-link-factor", "F", "slowdown of --slow-link-rank's links (> 0)", "1.0",
     "XPU_TIMER_SIM_SLOW_LINK_FACTOR"},
    {"--jitter-ms", "J", "random 0..J milliseconds added to every rank's step", "0", nullptr},
    {"--step-ms", "T", "host milliseconds per step besides the GPU work", "0", nullptr},
    {"--sync-lag", "L",
     "end each step by waiting for the step L steps earlier instead of for this one (the host "
     "stays up to L steps ahead, so the GPU's queue never runs dry when the host is descheduled)",
     "0", nullptr},
    {"--crash-rank", "R", "this rank crashes at --crash-step", "-1 (none)", nullptr},
    {"--crash-step", "S", "step at which --crash-rank crashes", "-1 (none)", nullptr},
    {"--crash-kind", "KIND", "segv|abort|abort-in-thread|sigkill-self|exception", "segv", nullptr},
    {"--mismatch-rank", "R", "this rank's collective disagrees with the others' at --mismatch-step",
     "-1 (none)", nullptr},
    {"--mismatch-step", "S", "step of the disagreeing collective", "-1 (none)", nullptr},
    {"--mismatch-file", "PATH",
     "--mismatch-rank disagrees once, at the first step that finds PATH (a benchmark's trigger)",
     "none", nullptr},
    {"--mismatch-kind", "KIND",
     "op (another collective), count (twice the elements), dtype (float32), root (root 1; needs "
     "--collective broadcast|reduce)",
     "op", nullptr},
    {"--mismatch-hold", "PATH",
     "right after its odd collective, --mismatch-rank waits in held_after_odd_collective until "
     "PATH exists (at most 120 s), so that the mismatch's stacks find it there",
     "none", nullptr},
    {"--second-comm-bytes", "B",
     "each step also all-reduces B bytes on a second communicator of the same ranks", "0 (none)",
     nullptr},
    {"--second-comm-groups", "G",
     "the second communicator is split from the first into G groups (rank mod G), as tensor or "
     "data parallel groups are",
     "1", nullptr},
    {"--hang-before-second", "",
     "--hang-rank stops before the second communicator's collective of --hang-step instead of "
     "before the first's",
     "off", nullptr},
    {"--parallel", "TP,PP,DP",
     "each step also all-reduces --bytes on the tensor, pipeline and data parallel groups "
     "Megatron builds (tensor ranks adjacent, then data, then pipeline; communicators named "
     "tp, pp, dp, split from the world one); TP*PP*DP must be the world size",
     "none", nullptr},
    {"--hang-before-group", "tp|pp|dp", "--hang-rank stops before that group's collective", "none",
     nullptr},
    {"--swap-rank", "R",
     "at --swap-step, rank R issues its tp collective before the world one (a deadlock by "
     "order with the rest of its tensor group); needs --parallel",
     "none", nullptr},
    {"--swap-step", "S", "the step of --swap-rank", "none", nullptr},
    {"--comm-name", "NAME",
     "create the communicator with ncclCommInitRankConfig named NAME (commName); the one of "
     "--second-comm-bytes is named NAME_split",
     "none (ncclCommInitRank)", nullptr},
    {"--exit-code", "C", "exit status of a run that ends normally (0-255)", "0", nullptr},
    {"--verbose", "", "print every step", "off", nullptr},
    {"--lib-dir", "DIR", "folder of libsim_workload.so", "the build's simgpu/lib",
     "XPU_TIMER_SIM_LIB_DIR"},
};

}  // namespace

const char* trainer_usage() {
  return "usage: sim_trainer [--steps N] [--gemm M,N,K] [--gemm2 M,N,K] [--gemm-api NAME|all]\n"
         "  [--gemm-batch B] [--gemms-per-step G] [--collective "
         "allreduce|allgather|reducescatter|broadcast|reduce|mixed]\n"
         "  [--bytes B] [--hang-rank R --hang-step S] [--slow-rank R --slow-ms T] [--jitter-ms J]\n"
         "  [--slow-gpu-rank R --slow-gpu-factor F] [--slow-link-rank R --slow-link-factor F]\n"
         "  [--step-ms T] [--sync-lag L] [--crash-rank R --crash-step S --crash-kind KIND]\n"
         "  [--mismatch-rank R --mismatch-step S --mismatch-kind op|count|dtype|root]\n"
         "  [--mismatch-hold PATH]\n"
         "  [--second-comm-bytes B] [--parallel TP,PP,DP [--hang-before-group G]\n"
         "  [--swap-rank R --swap-step S]] [--comm-name NAME] [--exit-code C] [--verbose]\n"
         "  [--stall-step S] [--lib-dir DIR]\n";
}

std::string trainer_help() {
  return std::string(trainer_usage()) +
         "A training loop on the simulated GPU (tests/simgpu): per step some GEMMs, then one\n"
         "collective across the ranks of xpu_timer_sim_launch. Steps count from 0.\n\nOptions:\n" +
         format_flag_help(kFlags, sizeof(kFlags) / sizeof(kFlags[0])) +
         "Also read: RANK, WORLD_SIZE, LOCAL_RANK (set by the launcher), XPU_TIMER_SIM_JOB_ID\n"
         "(the job's shared-memory names), XPU_TIMER_SIM_CHECK_SCOPE=1 (print what a global\n"
         "dlsym finds).\n";
}

bool export_slow_rank_knobs(const TrainerOptions& o, std::string* error) {
  const struct {
    int rank;
    double factor;
    const char* rank_var;
    const char* factor_var;
  } knobs[] = {
      {o.slow_gpu_rank, o.slow_gpu_factor, "XPU_TIMER_SIM_SLOW_GPU_RANK",
       "XPU_TIMER_SIM_SLOW_GPU_FACTOR"},
      {o.slow_link_rank, o.slow_link_factor, "XPU_TIMER_SIM_SLOW_LINK_RANK",
       "XPU_TIMER_SIM_SLOW_LINK_FACTOR"},
  };
  for (const auto& k : knobs) {
    // Only the knobs given, so that variables set by the caller stay in force otherwise.
    if (k.rank < 0) continue;
    char factor[32];
    snprintf(factor, sizeof(factor), "%.17g", k.factor);
    if (setenv(k.rank_var, std::to_string(k.rank).c_str(), 1) != 0 ||
        setenv(k.factor_var, factor, 1) != 0) {
      *error = std::string("setenv(") + k.rank_var + "): " + strerror(errno);
      return false;
    }
  }
  return true;
}

bool parse_trainer_options(int argc, char** argv, TrainerOptions* o, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      o->help = true;
      return true;
    }
    if (flag == "--verbose") {
      o->verbose = true;
      continue;
    }
    if (flag == "--hang-before-second") {
      o->hang_before_second = true;
      continue;
    }
    const FlagHelp* known = nullptr;
    for (const FlagHelp& f : kFlags) {
      if (flag == f.name) known = &f;
    }
    if (known == nullptr) {
      *error = "unknown flag '" + flag + "' (see --help)";
      return false;
    }
    if (i + 1 >= argc) {
      *error = flag + " needs a value (" + known->value + ")";
      return false;
    }
    const char* v = argv[++i];
    const char* expected = nullptr;  // what the value should have been
    if (flag == "--steps") {
      if (!to_int(v, &o->steps) || o->steps < 0) expected = "a whole number >= 0";
    } else if (flag == "--gemm") {
      char tail = 0;
      if (sscanf(v, "%d,%d,%d%c", &o->gemm_m, &o->gemm_n, &o->gemm_k, &tail) != 3 ||
          o->gemm_m <= 0 || o->gemm_n <= 0 || o->gemm_k <= 0) {
        expected = "M,N,K with three whole numbers > 0";
      }
    } else if (flag == "--gemm2") {
      char tail = 0;
      if (sscanf(v, "%d,%d,%d%c", &o->gemm2_m, &o->gemm2_n, &o->gemm2_k, &tail) != 3 ||
          o->gemm2_m <= 0 || o->gemm2_n <= 0 || o->gemm2_k <= 0) {
        expected = "M,N,K with three whole numbers > 0";
      }
    } else if (flag == "--gemm-api") {
      o->gemm_api = v;
    } else if (flag == "--gemm-batch") {
      if (!to_int(v, &o->gemm_batch) || o->gemm_batch <= 0) expected = "a whole number > 0";
    } else if (flag == "--gemms-per-step") {
      if (!to_int(v, &o->gemms_per_step) || o->gemms_per_step < 0) {
        expected = "a whole number >= 0";
      }
    } else if (flag == "--collective") {
      o->collective = v;
    } else if (flag == "--bytes") {
      if (!to_long(v, &o->bytes) || o->bytes < 0) expected = "a whole number of bytes >= 0";
    } else if (flag == "--hang-rank" || flag == "--hang-step" || flag == "--slow-rank" ||
               flag == "--crash-rank" || flag == "--crash-step" || flag == "--mismatch-rank" ||
               flag == "--mismatch-step") {
      int* field = flag == "--hang-rank"       ? &o->hang_rank
                   : flag == "--hang-step"     ? &o->hang_step
                   : flag == "--slow-rank"     ? &o->slow_rank
                   : flag == "--crash-rank"    ? &o->crash_rank
                   : flag == "--mismatch-rank" ? &o->mismatch_rank
                   : flag == "--mismatch-step" ? &o->mismatch_step
                                               : &o->crash_step;
      if (!to_int(v, field)) expected = "a whole number (-1: none)";
    } else if (flag == "--hang-file") {
      o->hang_file = v;
    } else if (flag == "--mismatch-file") {
      o->mismatch_file = v;
    } else if (flag == "--stall-step") {
      if (!to_int(v, &o->stall_step)) expected = "a whole number (-1: none)";
    } else if (flag == "--sync-lag") {
      if (!to_int(v, &o->sync_lag) || o->sync_lag < 0) expected = "a whole number >= 0";
    } else if (flag == "--slow-ms" || flag == "--jitter-ms" || flag == "--step-ms") {
      double* field = flag == "--slow-ms"     ? &o->slow_ms
                      : flag == "--jitter-ms" ? &o->jitter_ms
                                              : &o->step_ms;
      if (!to_double(v, field)) expected = "a number of milliseconds >= 0";
    } else if (flag == "--crash-kind") {
      o->crash_kind = v;
      if (o->crash_kind != "segv" && o->crash_kind != "abort" && o->crash_kind != "exception" &&
          o->crash_kind != "abort-in-thread" && o->crash_kind != "sigkill-self") {
        expected = "segv, abort, abort-in-thread, sigkill-self or exception";
      }
    } else if (flag == "--mismatch-kind") {
      o->mismatch_kind = v;
      if (o->mismatch_kind != "op" && o->mismatch_kind != "count" && o->mismatch_kind != "dtype" &&
          o->mismatch_kind != "root") {
        expected = "op, count, dtype or root";
      }
    } else if (flag == "--second-comm-bytes") {
      if (!to_long(v, &o->second_comm_bytes) || o->second_comm_bytes < 0) {
        expected = "a whole number of bytes >= 0";
      }
    } else if (flag == "--second-comm-groups") {
      if (!to_int(v, &o->second_comm_groups) || o->second_comm_groups < 1) {
        expected = "a whole number >= 1";
      }
    } else if (flag == "--parallel") {
      int a = 0, b = 0, c = 0;
      char tail = 0;
      if (std::sscanf(v, "%d,%d,%d%c", &a, &b, &c, &tail) != 3 || a < 1 || b < 1 || c < 1 ||
          a > 4096 || b > 4096 || c > 4096) {
        expected = "TP,PP,DP (three whole numbers >= 1)";
      } else {
        o->tp = a;
        o->pp = b;
        o->dp = c;
      }
    } else if (flag == "--hang-before-group") {
      o->hang_before_group = v;
      if (o->hang_before_group != "tp" && o->hang_before_group != "pp" &&
          o->hang_before_group != "dp") {
        expected = "tp, pp or dp";
      }
    } else if (flag == "--swap-rank" || flag == "--swap-step") {
      if (!to_int(v, flag == "--swap-rank" ? &o->swap_rank : &o->swap_step)) {
        expected = "a whole number";
      }
    } else if (flag == "--comm-name") {
      o->comm_name = v;
      if (o->comm_name.empty()) expected = "a name";
    } else if (flag == "--exit-code") {
      if (!to_int(v, &o->exit_code) || o->exit_code < 0 || o->exit_code > 255) {
        expected = "a whole number 0-255";
      }
    } else if (flag == "--slow-gpu-rank" || flag == "--slow-link-rank") {
      if (!to_int(v, flag == "--slow-gpu-rank" ? &o->slow_gpu_rank : &o->slow_link_rank)) {
        expected = "a whole number (-1: none)";
      }
    } else if (flag == "--slow-gpu-factor" || flag == "--slow-link-factor") {
      double* field = flag == "--slow-gpu-factor" ? &o->slow_gpu_factor : &o->slow_link_factor;
      if (!to_double(v, field) || !(*field > 0 && std::isfinite(*field))) {
        expected = "a finite factor > 0";
      }
    } else if (flag == "--mismatch-hold") {
      o->mismatch_hold = v;
    } else if (flag == "--lib-dir") {
      o->lib_dir = v;
    }
    if (expected != nullptr) {
      *error = flag + ": '" + v + "' is not " + expected;
      return false;
    }
  }
  if ((!o->hang_before_group.empty() || o->swap_rank >= 0) && o->tp == 0) {
    *error = "--hang-before-group and --swap-rank need --parallel";
    return false;
  }
  if (o->mismatch_rank >= 0 && o->mismatch_kind == "root" && o->collective != "broadcast" &&
      o->collective != "reduce") {
    *error =
        "--mismatch-kind root needs --collective broadcast or reduce (a collective with a root)";
    return false;
  }
  return true;
}

}  // namespace xpu_timer::simgpu
