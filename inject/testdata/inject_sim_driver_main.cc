// inject_sim_driver: runs a scripted sequence of simulated-GPU operations for
// the injected library's integration tests. Like sim_trainer (and Python
// loading torch) it loads libsim_workload.so with dlopen(RTLD_LOCAL), so the
// simulated CUDA/cuBLAS/NCCL libraries are not in the global symbol scope.
//
// Usage: inject_sim_driver STEP...   where STEP is one of
//   init                         sim_init(RANK, WORLD_SIZE, LOCAL_RANK)
//   name:NAME                    before init: the communicators are named NAME
//                                (ncclCommInitRankConfig) and NAME_split
//   gemm:API:M:N:K:BATCH         one GEMM (API: sim_gemm_api_from_name names)
//   coll:KIND:BYTES              one collective (allreduce, allgather, ...)
//   group:N:BYTES                N AllReduces in one ncclGroupStart/End
//   ring:BYTES                   send to rank+1, receive from rank-1, one group
//   split:NGROUPS:BYTES          AllReduce on ncclCommSplit(rank % NGROUPS)
//   capture:M:N:K                a GemmEx captured into a CUDA graph, then launched
//   sync                         wait for both streams
//   timedsync                    sync, then print "SYNCED <its ns> <ns since main began>"
//   timedcopy:BYTES              a synchronous copy of BYTES to the host from the last
//                                buffer, then print "SYNCED ..." as timedsync does
//   malloc:BYTES, mallocasync:BYTES   cudaMalloc / cudaMallocAsync (works without init)
//   free, freeasync              cudaFree / cudaFreeAsync of the last buffer allocated
//   launch:N[:API]               N launches of a user kernel (API 0 cudaLaunchKernel,
//                                1 __cudaLaunchKernel as nvcc 13 emits, 2 cudaLaunchKernelExC)
//   copy:KIND:BYTES[:sync]       one copy with the last buffer (KIND: h2d d2h d2d h2h
//                                default-h2d default-d2h peer; sync: cudaMemcpy(Peer))
//   devsync                      cudaDeviceSynchronize
//   scope                        print whether ncclAllReduce is in the global scope
//   fork                         fork a child that exits at once through exit()
//   wait                         print "READY", then block until stdin closes
//   calls                        print "CALLS" and the sim's counts of the library
//                                calls a hook library makes on its own behalf
//                                (sim_ext.h XpuSimCountedCall, in enum order)
//   part:NAME:ON                 xpu_timer_bench_set_part(NAME, ON) of the injected library
//   usercalls                    print "USERCALLS name count,..." : the sim's entry
//                                points called from the hook library's code on
//                                threads not its own, and how often
//   ourcalls                     print "OURCALLS name count,...": the same for
//                                calls on the hook library's own threads
//   finalize                     sim_finalize()
//   exit:CODE                    exit status of the driver (default 0)
// A step ending in *N runs N times (gemm:gemmex:64:64:64:1*500).
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/clock.h"

namespace {

using xpu_timer::monotonic_ns;
uint64_t g_main_ns = 0;

struct Api {
  int (*init)(int, int, int);
  int (*set_comm_name)(const char*);
  int (*gemm)(int, int, int, int, int);
  int (*collective)(int, long);
  int (*group_allreduce)(int, long);
  int (*sendrecv_ring)(long);
  int (*split_allreduce)(int, long);
  int (*capture_gemm)(int, int, int);
  int (*sync)();
  int (*finalize)();
  int (*gemm_api_from_name)(const char*);
  int (*collective_from_name)(const char*);
  const char* (*last_error)();
  int (*device_malloc)(long, int);
  int (*device_free)(int);
  int (*launch_kernels)(long, int);
  int (*copy)(int, long, int);
  int (*copy_kind_from_name)(const char*);
  int (*device_sync)();
};

[[noreturn]] void die(const std::string& m) {
  std::fprintf(stderr, "inject_sim_driver: %s\n", m.c_str());
  std::exit(100);
}

template <typename Fn>
void bind(void* lib, const char* name, Fn* out) {
  void* p = dlsym(lib, name);
  if (p == nullptr) die(std::string("dlsym ") + name);
  *out = reinterpret_cast<Fn>(p);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t colon = s.find(':', start);
    out.push_back(s.substr(start, colon - start));
    if (colon == std::string::npos) return out;
    start = colon + 1;
  }
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  g_main_ns = monotonic_ns();
  const char* dir = std::getenv("XPU_TIMER_SIM_LIB_DIR");
  if (dir == nullptr) die("XPU_TIMER_SIM_LIB_DIR is not set");
  const std::string path = std::string(dir) + "/libsim_workload.so";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) die(std::string("dlopen: ") + dlerror());
  Api api{};
  bind(lib, "sim_init", &api.init);
  bind(lib, "sim_set_comm_name", &api.set_comm_name);
  bind(lib, "sim_gemm", &api.gemm);
  bind(lib, "sim_collective", &api.collective);
  bind(lib, "sim_group_allreduce", &api.group_allreduce);
  bind(lib, "sim_sendrecv_ring", &api.sendrecv_ring);
  bind(lib, "sim_split_allreduce", &api.split_allreduce);
  bind(lib, "sim_capture_gemm", &api.capture_gemm);
  bind(lib, "sim_sync", &api.sync);
  bind(lib, "sim_finalize", &api.finalize);
  bind(lib, "sim_gemm_api_from_name", &api.gemm_api_from_name);
  bind(lib, "sim_collective_from_name", &api.collective_from_name);
  bind(lib, "sim_last_error", &api.last_error);
  bind(lib, "sim_device_malloc", &api.device_malloc);
  bind(lib, "sim_device_free", &api.device_free);
  bind(lib, "sim_launch_kernels", &api.launch_kernels);
  bind(lib, "sim_copy", &api.copy);
  bind(lib, "sim_copy_kind_from_name", &api.copy_kind_from_name);
  bind(lib, "sim_device_sync", &api.device_sync);

  int exit_code = 0;
  std::vector<std::string> steps;
  for (int i = 1; i < argc; ++i) {
    std::string step = argv[i];
    const size_t star = step.rfind('*');
    const long times = star == std::string::npos ? 1 : std::atol(step.c_str() + star + 1);
    if (star != std::string::npos) step.resize(star);
    for (long t = 0; t < times; ++t) steps.push_back(step);
  }
  for (const std::string& step : steps) {
    const char* const arg_text = step.c_str();
    const std::vector<std::string> a = split(step);
    const std::string& op = a[0];
    auto arg = [&](size_t j) -> long {
      if (j >= a.size()) die(std::string("missing argument in ") + arg_text);
      return std::atol(a[j].c_str());
    };
    int rc = 0;
    if (op == "init") {
      rc = api.init(env_int("RANK", 0), env_int("WORLD_SIZE", 1), env_int("LOCAL_RANK", 0));
    } else if (op == "name") {
      rc = api.set_comm_name(a.size() > 1 ? a[1].c_str() : "");
    } else if (op == "gemm") {
      const int which = api.gemm_api_from_name(a.size() > 1 ? a[1].c_str() : "");
      if (which < 0) die("unknown GEMM api in " + std::string(arg_text));
      rc = api.gemm(arg(2), arg(3), arg(4), arg(5), which);
    } else if (op == "coll") {
      const int kind = api.collective_from_name(a.size() > 1 ? a[1].c_str() : "");
      if (kind < 0) die("unknown collective in " + std::string(arg_text));
      rc = api.collective(kind, arg(2));
    } else if (op == "group") {
      rc = api.group_allreduce(arg(1), arg(2));
    } else if (op == "ring") {
      rc = api.sendrecv_ring(arg(1));
    } else if (op == "split") {
      rc = api.split_allreduce(arg(1), arg(2));
    } else if (op == "capture") {
      rc = api.capture_gemm(arg(1), arg(2), arg(3));
    } else if (op == "sync") {
      rc = api.sync();
    } else if (op == "timedsync" || op == "timedcopy") {
      const uint64_t before = monotonic_ns();
      rc = op == "timedsync" ? api.sync() : api.copy(api.copy_kind_from_name("d2h"), arg(1), 1);
      const uint64_t after = monotonic_ns();
      std::printf("SYNCED %llu %llu\n", static_cast<unsigned long long>(after - before),
                  static_cast<unsigned long long>(after - g_main_ns));
      std::fflush(stdout);
    } else if (op == "malloc" || op == "mallocasync") {
      rc = api.device_malloc(arg(1), op == "mallocasync" ? 1 : 0);
    } else if (op == "free" || op == "freeasync") {
      rc = api.device_free(op == "freeasync" ? 1 : 0);
    } else if (op == "launch") {
      rc = api.launch_kernels(arg(1), a.size() > 2 ? static_cast<int>(arg(2)) : 0);
    } else if (op == "copy") {
      const int kind = api.copy_kind_from_name(a.size() > 1 ? a[1].c_str() : "");
      if (kind < 0) die("unknown copy kind in " + std::string(arg_text));
      const bool sync = a.size() > 3 && a[3] == "sync";
      rc = api.copy(kind, arg(2), sync ? 1 : 0);
    } else if (op == "devsync") {
      rc = api.device_sync();
    } else if (op == "scope") {
      std::printf("global ncclCommCount %s, global cublasCreate_v2 %s\n",
                  dlsym(RTLD_DEFAULT, "ncclCommCount") == nullptr ? "absent" : "present",
                  dlsym(RTLD_DEFAULT, "cublasCreate_v2") == nullptr ? "absent" : "present");
      std::fflush(stdout);
    } else if (op == "fork") {
      std::fflush(stdout);
      const pid_t pid = fork();
      if (pid < 0) die("fork failed");
      if (pid == 0) std::exit(0);  // runs the atexit handlers inherited from the parent
      int status = 0;
      waitpid(pid, &status, 0);
      std::printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      std::fflush(stdout);
    } else if (op == "wait") {
      std::printf("READY\n");
      std::fflush(stdout);
      char buf[64];
      while (read(0, buf, sizeof(buf)) > 0) {
      }
    } else if (op == "calls") {
      void* cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
      auto count =
          cudart != nullptr
              ? reinterpret_cast<unsigned long (*)(int)>(dlsym(cudart, "xpu_sim_call_count"))
              : nullptr;
      if (count == nullptr) die("the simulated libcudart.so.13 is not loaded");
      std::printf("CALLS");
      for (int w = 0; w < 5; ++w) std::printf(" %lu", count(w));
      std::printf("\n");
      std::fflush(stdout);
    } else if (op == "part") {
      auto set_part = reinterpret_cast<int (*)(const char*, int)>(
          dlsym(RTLD_DEFAULT, "xpu_timer_bench_set_part"));
      if (set_part == nullptr) die("xpu_timer_bench_set_part: the injected library is not loaded");
      rc = set_part(a.size() > 1 ? a[1].c_str() : "", static_cast<int>(arg(2)));
    } else if (op == "usercalls" || op == "ourcalls") {
      const bool user = op == "usercalls";
      void* cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
      auto calls =
          cudart != nullptr
              ? reinterpret_cast<size_t (*)(char*, size_t)>(dlsym(
                    cudart, user ? "xpu_sim_user_thread_calls" : "xpu_sim_library_thread_calls"))
              : nullptr;
      if (calls == nullptr) die("the simulated libcudart.so.13 is not loaded");
      std::string text(calls(nullptr, 0) + 1, '\0');
      calls(text.data(), text.size());
      text.resize(std::strlen(text.c_str()));
      for (char& c : text) c = c == '\n' ? ',' : c;
      std::printf("%s %s\n", user ? "USERCALLS" : "OURCALLS", text.c_str());
      std::fflush(stdout);
    } else if (op == "finalize") {
      rc = api.finalize();
    } else if (op == "exit") {
      exit_code = static_cast<int>(arg(1));
    } else {
      die(std::string("unknown step ") + arg_text);
    }
    if (rc != 0) die(std::string(arg_text) + " failed: " + api.last_error());
  }
  return exit_code;
}
