// nccl_profiler_driver: the "application" of the profiler-plugin test. Linked
// against the fake libnccl.so.2 (inject/testdata/fake_nccl_profiling.cc) and
// the simulated libcudart, so its NCCL calls go through the preloaded hooks,
// which then call the fake NCCL, which calls our profiler plugin back.
//
// Usage: nccl_profiler_driver STEP...   where STEP is
//   ar:BYTES:ALGO:PROTO:CHANNELS         one AllReduce launched with that algo/proto
//   async:BYTES:ALGO:PROTO:CHANNELS      same, plugin events on another thread
//   group:BYTES:ALGO:PROTO[:ALGO:PROTO]  ncclGroupStart, one AllReduce per pair, ncclGroupEnd
//   kernel_ch:on|off                     the KernelCh probe (xpu_timer_bench_set_kernel_ch)
//   kernel_ch_dump:PATH                  its samples to PATH (xpu_timer_bench_kernel_ch_dump)
//   wait                                 print "READY", block until stdin closes
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" void fake_nccl_set_next(const char* algo, const char* proto, int channels, int async);
extern "C" int fake_nccl_activation_mask();

namespace {

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

[[noreturn]] void die(const std::string& m) {
  std::fprintf(stderr, "nccl_profiler_driver: %s\n", m.c_str());
  std::exit(100);
}

}  // namespace

int main(int argc, char** argv) {
  if (cudaSetDevice(0) != cudaSuccess) die("cudaSetDevice");
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) die("cudaStreamCreate");
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::snprintf(id.internal, sizeof(id.internal), "nccl-profiler-driver");
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 4, id, 0) != ncclSuccess) die("ncclCommInitRank");
  std::printf("mask %d\n", fake_nccl_activation_mask());
  for (int i = 1; i < argc; ++i) {
    const std::vector<std::string> a = split(argv[i]);
    if ((a[0] == "ar" || a[0] == "async") && a.size() == 5) {
      fake_nccl_set_next(a[2].c_str(), a[3].c_str(), std::atoi(a[4].c_str()), a[0] == "async");
      const size_t count = std::strtoull(a[1].c_str(), nullptr, 10) / 2;
      if (ncclAllReduce(nullptr, nullptr, count, ncclBfloat16, ncclSum, comm, stream) !=
          ncclSuccess) {
        die("ncclAllReduce");
      }
    } else if (a[0] == "group" && a.size() >= 4 && a.size() % 2 == 0) {
      const size_t count = std::strtoull(a[1].c_str(), nullptr, 10) / 2;
      ncclGroupStart();
      for (size_t m = 2; m + 1 < a.size(); m += 2) {
        fake_nccl_set_next(a[m].c_str(), a[m + 1].c_str(), 4, 0);
        ncclAllReduce(nullptr, nullptr, count, ncclBfloat16, ncclSum, comm, stream);
      }
      if (ncclGroupEnd() != ncclSuccess) die("ncclGroupEnd");
    } else if (a[0] == "kernel_ch" && a.size() == 2) {
      // The preloaded library's control, found the way a benchmark finds it.
      auto* set =
          reinterpret_cast<int (*)(int)>(dlsym(RTLD_DEFAULT, "xpu_timer_bench_set_kernel_ch"));
      if (set == nullptr) die("no xpu_timer_bench_set_kernel_ch");
      std::printf("kernel_ch %d mask %d\n", set(a[1] == "on" ? 1 : 0), fake_nccl_activation_mask());
    } else if (a[0] == "kernel_ch_dump" && a.size() == 2) {
      auto* dump = reinterpret_cast<long (*)(const char*)>(
          dlsym(RTLD_DEFAULT, "xpu_timer_bench_kernel_ch_dump"));
      if (dump == nullptr) die("no xpu_timer_bench_kernel_ch_dump");
      std::printf("dumped %ld\n", dump(a[1].c_str()));
    } else if (a[0] == "wait") {
      cudaStreamSynchronize(stream);
      std::printf("READY\n");
      std::fflush(stdout);
      char buf[16];
      while (std::fread(buf, 1, sizeof(buf), stdin) > 0) {
      }
    } else {
      die(std::string("bad step ") + argv[i]);
    }
  }
  ncclCommDestroy(comm);
  return 0;
}
