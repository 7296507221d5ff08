// sim_trainer: a training loop over libsim_workload.so, loaded with
// dlopen(RTLD_NOW | RTLD_LOCAL) as Python loads torch, so the simulated
// CUDA/cuBLAS/NCCL libraries stay out of the global symbol scope (a hook
// that resolves them with dlsym(RTLD_NEXT) gets NULL, as on a GPU machine).
// Each step: a few GEMMs, the collective, a sync. Flags: trainer_options.h.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/env_config.h"
#include "tests/simgpu/sim_config.h"
#include "tests/simgpu/sim_workload.h"
#include "tests/simgpu/trainer_options.h"

namespace sim = xpu_timer::simgpu;

// The name tests and stack dumps look for: the hung rank sits here, outside
// any GPU work, for ever (until a signal kills it).
extern "C" __attribute__((noinline, used)) void stuck_in_host_code(int rank, int step) {
  printf("rank %d stuck_in_host_code at step %d\n", rank, step);
  fflush(stdout);
  for (;;) pause();
}

// --stall-step: every rank sits here, with nothing in flight, while its
// xpu-timer thread keeps the heartbeat (a long evaluation or checkpoint looks
// the same); stacks name it.
extern "C" __attribute__((noinline, used)) void stalled_in_host_code(int rank, int step) {
  printf("rank %d stalled_in_host_code at step %d\n", rank, step);
  fflush(stdout);
  for (;;) sleep(60);
}

// --mismatch-hold: the odd rank waits here right after its odd collective
// until the test creates the file (it does once the mismatch's stacks named
// this place), so that the stacks find it inside the mismatch's code rather
// than wherever its next steps took it. Bounded: a test that fails early
// leaves no rank waiting for ever. The wait is one line, so that the stacks
// name one line whichever call they interrupt.
extern "C" __attribute__((noinline, used)) void held_after_odd_collective(int rank,
                                                                          const char* path) {
  printf("rank %d held_after_odd_collective until %s exists\n", rank, path);
  fflush(stdout);
  for (int i = 0; i < 12000 && ::access(path, F_OK) != 0; ++i) usleep(10000);
}

namespace {

struct WorkloadApi {
  int (*init)(int, int, int);
  int (*set_comm_name)(const char*);
  int (*gemm)(int, int, int, int, int);
  int (*collective)(int, long);
  int (*collective_ex)(int, long, int, int);
  int (*split_allreduce)(int, long);
  int (*subgroup_allreduce)(const char*, int, long);
  int (*sync)();
  int (*sync_lagged)(int);
  int (*finalize)();
  void (*crash_segv)();
  void (*crash_abort)();
  void (*crash_abort_in_thread)();
  int (*gemm_api_from_name)(const char*);
  int (*collective_from_name)(const char*);
  const char* (*last_error)();
};

[[noreturn]] void die(const std::string& message) {
  fprintf(stderr, "sim_trainer: %s\n", message.c_str());
  exit(1);
}

template <typename Fn>
void bind(void* lib, const char* name, Fn* out) {
  void* sym = dlsym(lib, name);
  if (sym == nullptr) die(std::string("dlsym(") + name + "): " + dlerror());
  *out = reinterpret_cast<Fn>(sym);
}

WorkloadApi load(const std::string& dir) {
  const std::string path = dir + "/libsim_workload.so";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) die("dlopen(" + path + "): " + dlerror());
  WorkloadApi api{};
  bind(lib, "sim_init", &api.init);
  bind(lib, "sim_set_comm_name", &api.set_comm_name);
  bind(lib, "sim_gemm", &api.gemm);
  bind(lib, "sim_collective", &api.collective);
  bind(lib, "sim_collective_ex", &api.collective_ex);
  bind(lib, "sim_split_allreduce", &api.split_allreduce);
  bind(lib, "sim_subgroup_allreduce", &api.subgroup_allreduce);
  bind(lib, "sim_sync", &api.sync);
  bind(lib, "sim_sync_lagged", &api.sync_lagged);
  bind(lib, "sim_finalize", &api.finalize);
  bind(lib, "sim_crash_segv", &api.crash_segv);
  bind(lib, "sim_crash_abort", &api.crash_abort);
  bind(lib, "sim_crash_abort_in_thread", &api.crash_abort_in_thread);
  bind(lib, "sim_gemm_api_from_name", &api.gemm_api_from_name);
  bind(lib, "sim_collective_from_name", &api.collective_from_name);
  bind(lib, "sim_last_error", &api.last_error);
  return api;
}

// The color of `rank` in the tensor ("tp"), pipeline ("pp") or data ("dp")
// parallel group of --parallel, as Megatron orders ranks: tensor ranks
// adjacent, then data, then pipeline.
int group_color(const sim::TrainerOptions& o, int rank, const std::string& group) {
  const int tp_idx = rank % o.tp;
  const int dp_idx = (rank / o.tp) % o.dp;
  const int pp_idx = rank / (o.tp * o.dp);
  if (group == "tp") return rank / o.tp;
  if (group == "dp") return pp_idx * o.tp + tp_idx;
  return dp_idx * o.tp + tp_idx;
}

void sleep_ms(double ms) {
  if (ms <= 0) return;
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ms / 1000);
  ts.tv_nsec = static_cast<long>((ms - static_cast<double>(ts.tv_sec) * 1000) * 1e6);
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void check(const WorkloadApi& api, int rc, const char* what) {
  if (rc != 0) die(std::string(what) + " failed: " + api.last_error());
}

}  // namespace

// --crash-kind exception lets an exception escape main on purpose.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  sim::TrainerOptions opt;
  std::string error;
  if (!sim::parse_trainer_options(argc, argv, &opt, &error)) {
    fprintf(stderr, "sim_trainer: %s\n%s", error.c_str(), sim::trainer_usage());
    return 2;
  }
  if (opt.help) {
    fputs(sim::trainer_help().c_str(), stdout);
    return 0;
  }
  const xpu_timer::RankIdentity id = xpu_timer::rank_identity_from_env();
  std::string dir = opt.lib_dir;
  if (dir.empty())
    dir = xpu_timer::env_string("XPU_TIMER_SIM_LIB_DIR", XPU_TIMER_SIM_DEFAULT_LIB_DIR);
  // Before the simulated libraries are loaded (they read the variables once).
  if (!sim::export_slow_rank_knobs(opt, &error)) die(error);
  const WorkloadApi api = load(dir);
  if (xpu_timer::env_bool("XPU_TIMER_SIM_CHECK_SCOPE", false)) {
    // What a preloaded hook's dlsym(RTLD_NEXT/RTLD_DEFAULT) would find (tests).
    printf("global scope: ncclAllReduce=%s cublasGemmEx=%s\n",
           dlsym(RTLD_DEFAULT, "ncclAllReduce") != nullptr ? "present" : "absent",
           dlsym(RTLD_DEFAULT, "cublasGemmEx") != nullptr ? "present" : "absent");
    fflush(stdout);
  }

  std::vector<int> apis;
  if (opt.gemm_api == "all") {
    for (int i = 0; i < 7; ++i) apis.push_back(i);
  } else {
    const int a = api.gemm_api_from_name(opt.gemm_api.c_str());
    if (a < 0) die("unknown --gemm-api " + opt.gemm_api);
    apis.push_back(a);
  }
  const bool mixed = opt.collective == "mixed";
  const int coll = mixed ? SIM_ALLREDUCE : api.collective_from_name(opt.collective.c_str());
  if (coll < 0) die("unknown --collective " + opt.collective);

  if (!opt.comm_name.empty()) {
    check(api, api.set_comm_name(opt.comm_name.c_str()), "sim_set_comm_name");
  }
  if (opt.tp > 0 && opt.tp * opt.pp * opt.dp != id.world_size) {
    die("--parallel " + std::to_string(opt.tp) + "," + std::to_string(opt.pp) + "," +
        std::to_string(opt.dp) + " does not make the world size " + std::to_string(id.world_size));
  }
  check(api, api.init(id.rank, id.world_size, id.local_rank), "sim_init");
  std::mt19937 rng(static_cast<unsigned>(id.rank) * 7919u + 17u);
  std::uniform_real_distribution<double> jitter(0.0, opt.jitter_ms);

  size_t next_api = 0;
  bool mismatched = false;  // --mismatch-file: once
  for (int step = 0; step < opt.steps; ++step) {
    if (step == opt.stall_step) stalled_in_host_code(id.rank, step);
    if (id.rank == opt.crash_rank && step == opt.crash_step) {
      printf("rank %d crashing (%s) at step %d\n", id.rank, opt.crash_kind.c_str(), step);
      fflush(stdout);
      if (opt.crash_kind == "segv") api.crash_segv();
      if (opt.crash_kind == "abort") api.crash_abort();
      if (opt.crash_kind == "abort-in-thread") api.crash_abort_in_thread();
      if (opt.crash_kind == "sigkill-self") kill(getpid(), SIGKILL);
      throw std::runtime_error("simulated training failure at step " + std::to_string(step));
    }
    for (int g = 0; g < opt.gemms_per_step; ++g) {
      const int which = apis[next_api++ % apis.size()];
      check(api, api.gemm(opt.gemm_m, opt.gemm_n, opt.gemm_k, opt.gemm_batch, which), "sim_gemm");
    }
    for (int g = 0; opt.gemm2_m > 0 && g < opt.gemms_per_step; ++g) {
      const int which = apis[next_api++ % apis.size()];
      check(api, api.gemm(opt.gemm2_m, opt.gemm2_n, opt.gemm2_k, opt.gemm_batch, which),
            "sim_gemm");
    }
    sleep_ms(opt.step_ms);
    if (opt.jitter_ms > 0) sleep_ms(jitter(rng));
    if (id.rank == opt.slow_rank) sleep_ms(opt.slow_ms);
    const bool hang_here = id.rank == opt.hang_rank &&
                           (step == opt.hang_step ||
                            (!opt.hang_file.empty() && ::access(opt.hang_file.c_str(), F_OK) == 0));
    if (hang_here && !opt.hang_before_second && opt.hang_before_group.empty()) {
      stuck_in_host_code(id.rank, step);
    }
    const auto group_allreduce = [&](const std::string& group) {
      if (hang_here && opt.hang_before_group == group) stuck_in_host_code(id.rank, step);
      check(api, api.subgroup_allreduce(group.c_str(), group_color(opt, id.rank, group), opt.bytes),
            "sim_subgroup_allreduce");
    };
    const bool swap_here = id.rank == opt.swap_rank && step == opt.swap_step;
    if (swap_here) {
      printf("rank %d issues its tp collective before the world one at step %d\n", id.rank, step);
      fflush(stdout);
      group_allreduce("tp");
    }
    const int kind = mixed ? step % 5 : coll;
    const bool mismatch_here =
        id.rank == opt.mismatch_rank &&
        (step == opt.mismatch_step || (!mismatched && !opt.mismatch_file.empty() &&
                                       ::access(opt.mismatch_file.c_str(), F_OK) == 0));
    if (mismatch_here) {
      mismatched = true;
      printf("rank %d issues a mismatching collective (%s) at step %d\n", id.rank,
             opt.mismatch_kind.c_str(), step);
      fflush(stdout);
      const std::string& k = opt.mismatch_kind;
      check(api,
            api.collective_ex(
                k == "op" ? (kind == SIM_ALLGATHER ? SIM_ALLREDUCE : SIM_ALLGATHER) : kind,
                k == "count" ? opt.bytes * 2 : opt.bytes, k == "dtype" ? SIM_F32 : SIM_BF16,
                k == "root" ? 1 % id.world_size : 0),
            "sim_collective");
      if (!opt.mismatch_hold.empty()) {
        held_after_odd_collective(id.rank, opt.mismatch_hold.c_str());
      }
    } else {
      check(api, api.collective(kind, opt.bytes), "sim_collective");
    }
    if (opt.second_comm_bytes > 0) {
      if (hang_here && opt.hang_before_second) {
        stuck_in_host_code(id.rank, step);  // the second communicator's hang
      }
      check(api, api.split_allreduce(opt.second_comm_groups, opt.second_comm_bytes),
            "sim_split_allreduce");
    }
    if (opt.tp > 0) {
      for (const char* group : {"tp", "pp", "dp"}) {
        if (!(swap_here && std::string(group) == "tp")) group_allreduce(group);
      }
    }
    if (opt.sync_lag > 0) {
      check(api, api.sync_lagged(opt.sync_lag), "sim_sync_lagged");
    } else {
      check(api, api.sync(), "sim_sync");
    }
    if (opt.verbose) {
      printf("rank %d step %d done\n", id.rank, step);
      fflush(stdout);
    }
  }
  check(api, api.finalize(), "sim_finalize");
  printf("rank %d done\n", id.rank);
  fflush(stdout);
  return opt.exit_code;
}
