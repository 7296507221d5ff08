// What a hooked call costs the user's thread on the CPU, against the
// simulated GPU (tests/simgpu): each benchmark runs the same call with
// xpu-timer watching and paused (xpu_timer_bench_set_paused, the hooks then
// call straight through), in one process, so the difference is the hot
// path's own cost (docs/architecture.md "The hot path"). The simulated
// libraries' own cost is in both; the CPU column is the calling thread's
// (the stream workers and the Poller run on threads of their own).
//
// Usage: hot_path_bench [--sample-per-sec R] [benchmark flags]
// R is XPU_TIMER_SAMPLE_PER_SEC: 10 (the default) times one call of a
// repeated shape in ~10^5, so its calls are sampled out; 0 times every one.
// The process starts a stand-in supervisor and re-executes itself with
// libxpu_timer_inject.so preloaded.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/env_names.h"
#include "inject/testdata/fake_supervisor.h"

namespace {

constexpr const char* kChildMark = "XPU_TIMER_HOT_PATH_BENCH_CHILD";

// libsim_workload.so's C API (tests/simgpu/sim_workload.h), loaded like the
// trainers load it: dlopen(RTLD_LOCAL), so the hooks reach it as they reach
// torch.
struct Sim {
  int (*init)(int, int, int);
  int (*gemm)(int, int, int, int, int);
  int (*collective)(int, long);
  int (*sync)();
  int (*device_malloc)(long, int);
  int (*copy)(int, long, int);
  int (*set_paused)(int);
};
Sim g_sim;

constexpr int kGemmEx = 0, kLtMatmul = 6, kAllReduce = 0, kCopyH2D = 0, kCopyDefaultH2D = 4;
// The simulated streams' queues and the event pools stay bounded: every
// kSyncEvery calls the benchmark waits for the GPU (no CPU of this thread).
// The shapes keep the simulated GPU busy for microseconds per call, so that
// a stream's worker sleeps in its first kernel while the calls queue behind
// it: an idle worker would be woken by every call, a futex wake that costs
// the calling thread more than the whole hot path, and varies as much.
constexpr int kSyncEvery = 256;

template <typename Fn>
void bind(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*out == nullptr) {
    std::fprintf(stderr, "hot_path_bench: %s not found\n", name);
    std::exit(2);
  }
}

// Arg 0: watched, 1: paused.
template <typename Call>
void run(benchmark::State& state, Call call) {
  const bool paused = state.range(0) != 0;
  if (g_sim.set_paused(paused ? 1 : 0) != 0) {
    state.SkipWithError("xpu-timer is not active in this process");
    return;
  }
  g_sim.sync();
  int n = 0;
  for (auto _ : state) {
    if (call() != 0) {
      state.SkipWithError("simulated call failed");
      break;
    }
    if (++n % kSyncEvery == 0) g_sim.sync();
  }
  g_sim.sync();
  g_sim.set_paused(0);
  state.SetLabel(paused ? "paused" : "watched");
}

void BM_GemmEx(benchmark::State& s) {
  run(s, [] { return g_sim.gemm(512, 512, 512, 1, kGemmEx); });
}
void BM_LtMatmul(benchmark::State& s) {
  // The workload creates and destroys its descriptors on every call, as
  // PyTorch does.
  run(s, [] { return g_sim.gemm(512, 512, 512, 1, kLtMatmul); });
}
void BM_AllReduce(benchmark::State& s) {
  run(s, [] { return g_sim.collective(kAllReduce, 1 << 20); });
}
void BM_MemcpyH2D(benchmark::State& s) {
  run(s, [] { return g_sim.copy(kCopyH2D, 1 << 20, 0); });
}
void BM_MemcpyDefault(benchmark::State& s) {
  run(s, [] { return g_sim.copy(kCopyDefaultH2D, 1 << 20, 0); });
}
BENCHMARK(BM_GemmEx)->Arg(0)->Arg(1);
BENCHMARK(BM_LtMatmul)->Arg(0)->Arg(1);
BENCHMARK(BM_AllReduce)->Arg(0)->Arg(1);
BENCHMARK(BM_MemcpyH2D)->Arg(0)->Arg(1);
BENCHMARK(BM_MemcpyDefault)->Arg(0)->Arg(1);

int child_main(int argc, char** argv) {
  void* lib = dlopen(SIM_LIB_DIR "/libsim_workload.so", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "hot_path_bench: %s\n", dlerror());
    return 2;
  }
  bind(lib, "sim_init", &g_sim.init);
  bind(lib, "sim_gemm", &g_sim.gemm);
  bind(lib, "sim_collective", &g_sim.collective);
  bind(lib, "sim_sync", &g_sim.sync);
  bind(lib, "sim_device_malloc", &g_sim.device_malloc);
  bind(lib, "sim_copy", &g_sim.copy);
  bind(RTLD_DEFAULT, "xpu_timer_bench_set_paused", &g_sim.set_paused);
  if (g_sim.init(0, 1, 0) != 0 || g_sim.device_malloc(1 << 20, 0) != 0) {
    std::fprintf(stderr, "hot_path_bench: the simulated GPU did not start\n");
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv(kChildMark) != nullptr) return child_main(argc, argv);
  std::string rate = "10";
  std::vector<char*> args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sample-per-sec") == 0 && i + 1 < argc) {
      rate = argv[++i];
    } else {
      args.push_back(argv[i]);
    }
  }
  args.push_back(nullptr);
  xpu_timer::inject::testing::FakeSupervisor sup;
  if (!sup.ok()) {
    std::fprintf(stderr, "hot_path_bench: cannot listen on a unix socket\n");
    return 2;
  }
  const pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    for (const std::string& e : sup.env()) putenv(strdup(e.c_str()));
    setenv(xpu_timer::proto::kEnvPreload, INJECT_LIB, 1);
    setenv("XPU_TIMER_SIM_LIB_DIR", SIM_LIB_DIR, 1);
    setenv("XPU_TIMER_SIM_JOB_ID", ("hot-path-bench-" + std::to_string(getpid())).c_str(), 1);
    setenv("XPU_TIMER_SAMPLE_PER_SEC", rate.c_str(), 1);
    setenv(kChildMark, "1", 1);
    execv("/proc/self/exe", args.data());
    _exit(127);
  }
  std::string error;
  if (sup.accept_rank(60, &error) == nullptr) {
    std::fprintf(stderr, "hot_path_bench: the benchmark never registered: %s\n", error.c_str());
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
