// The shape of libxpu_timer_inject.so as an ELF object: it must load into
// any process of the job (bash, torchrun, Python) without pulling in a CUDA
// library or a second libstdc++, and export nothing but the hooks, so it
// never interposes anything else the application defines.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>

#include "tests/harness/child_process.h"

namespace xpu_timer::inject {
namespace {

std::string run(const std::vector<std::string>& argv) {
  xpu_timer::testing::Child child(argv);
  return child.wait_exit_code(std::chrono::seconds(30)) == 0 ? child.output() : "";
}

class ElfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/usr/bin/readelf", X_OK) != 0) GTEST_SKIP() << "readelf is not installed";
  }
};

TEST_F(ElfTest, NeedsOnlyTheCLibrary) {
  const std::string out = run({"/usr/bin/readelf", "-d", "-W", INJECT_LIB});
  ASSERT_FALSE(out.empty());
  std::istringstream in(out);
  std::string line;
  std::set<std::string> needed;
  while (std::getline(in, line)) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    const size_t a = line.find('['), b = line.find(']');
    if (a != std::string::npos && b != std::string::npos)
      needed.insert(line.substr(a + 1, b - a - 1));
  }
  for (const std::string& lib : needed) {
    EXPECT_TRUE(lib == "libc.so.6" || lib == "ld-linux-x86-64.so.2" || lib == "libm.so.6" ||
                lib == "libdl.so.2" || lib == "libpthread.so.0")
        << "unexpected DT_NEEDED " << lib;
  }
  EXPECT_TRUE(needed.count("libc.so.6"));
}

TEST_F(ElfTest, ExportsExactlyTheHooks) {
  const std::string out = run({"/usr/bin/readelf", "--dyn-syms", "-W", INJECT_LIB});
  ASSERT_FALSE(out.empty());
  std::set<std::string> defined;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(f >> num >> value >> size >> type >> bind >> vis >> ndx >> name)) continue;
    if (num == "Num:" || ndx == "UND" || bind == "LOCAL" || type == "SECTION") continue;
    defined.insert(name.substr(0, name.find('@')));
  }
  const std::set<std::string> hooks = {"cublasGemmEx",
                                       "cublasGemmStridedBatchedEx",
                                       "cublasSgemm_v2",
                                       "cublasHgemm",
                                       "cublasSgemmStridedBatched",
                                       "cublasHgemmStridedBatched",
                                       "cublasLtMatmul",
                                       "ncclAllReduce",
                                       "ncclAllGather",
                                       "ncclReduceScatter",
                                       "ncclBroadcast",
                                       "ncclReduce",
                                       "ncclSend",
                                       "ncclRecv",
                                       "ncclGroupStart",
                                       "ncclGroupEnd",
                                       "ncclCommInitRank",
                                       "ncclCommInitRankConfig",
                                       "ncclCommInitRankScalable",
                                       "ncclCommSplit",
                                       "ncclCommDestroy",
                                       "ncclCommAbort",
                                       "cudaLaunchKernel",
                                       "__cudaLaunchKernel",
                                       "__cudaLaunchKernel_ptsz",
                                       "cudaLaunchKernelExC",
                                       "cudaLaunchCooperativeKernel",
                                       "cudaMalloc",
                                       "cudaMallocAsync",
                                       "cudaMallocFromPoolAsync",
                                       "cudaFree",
                                       "cudaFreeAsync",
                                       "cudaMemcpy",
                                       "cudaMemcpyAsync",
                                       "cudaMemcpyPeer",
                                       "cudaMemcpyPeerAsync",
                                       "cudaStreamSynchronize",
                                       "cudaEventSynchronize",
                                       "cudaDeviceSynchronize",
                                       "xpu_timer_bench_set_paused",
                                       "xpu_timer_bench_set_part",
                                       "xpu_timer_bench_call_site",
                                       "xpu_timer_bench_call_site_text",
                                       "xpu_timer_bench_set_kernel_ch",
                                       "xpu_timer_bench_kernel_ch_dump",
                                       "xpu_timer_python_builtin",
                                       "xpu_timer_python_trace",
                                       "xpu_timer_python_set_retry",
                                       "xpu_timer_python_warn",
                                       "xpu_timer_python_probes",
                                       "xpu_timer_python_step",
                                       "xpu_timer_python_name_thread",
                                       "xpu_timer_python_debug",
                                       "xpu_timer_python_comm_count",
                                       "xpu_timer_python_name_comm",
                                       "InitializeInjectionNvtx2",
                                       "ncclProfiler_v1",
                                       "ncclProfiler_v2",
                                       "ncclProfiler_v3",
                                       "ncclProfiler_v4",
                                       "ncclProfiler_v5"};
  EXPECT_EQ(defined, hooks);
}

}  // namespace
}  // namespace xpu_timer::inject
