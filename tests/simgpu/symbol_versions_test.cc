// The simulated libraries export what the real ones export, with the same
// symbol versions (cudart/cublas/cublasLt versioned, NCCL unversioned), and
// nothing else; and sim_trainer keeps them out of the global scope.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "tests/harness/child_process.h"
#include "tests/simgpu/sim_segments.h"

namespace {

using xpu_timer::testing::Child;
using namespace std::chrono_literals;

// "name@@version" (or "name") of every defined dynamic symbol, via nm.
bool dynamic_symbols(const std::string& lib, std::vector<std::string>* out) {
  Child nm({"nm", "-D", "--with-symbol-versions", "--defined-only", lib});
  if (nm.wait_exit_code(30s) != 0) return false;
  std::istringstream lines(nm.output());
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string addr, type, name;
    if (fields >> addr >> type >> name) out->push_back(name);
  }
  return !out->empty();
}

bool nm_available() { return Child({"nm", "--version"}).wait_exit_code(30s) == 0; }

bool has(const std::vector<std::string>& syms, const std::string& s) {
  for (const auto& x : syms) {
    if (x == s) return true;
  }
  return false;
}

struct LibCase {
  const char* file;
  const char* version;  // "" for unversioned
  std::vector<const char*> expected;
  std::vector<const char*> prefixes;  // every export starts with one of these
};

TEST(SymbolVersions, MatchTheRealLibraries) {
  if (!nm_available()) GTEST_SKIP() << "nm (binutils) is not installed";
  const std::vector<LibCase> cases = {
      {"libcudart.so.13",
       "libcudart.so.13",
       {"cudaEventRecord", "cudaEventQuery", "cudaEventElapsedTime", "cudaStreamSynchronize",
        "cudaStreamIsCapturing", "cudaLaunchHostFunc", "cudaMemcpyAsync", "cudaGetLastError"},
       {"cuda", "__cuda", "xpu_sim_", "libcudart.so.13"}},
      {"libcublas.so.13",
       "libcublas.so.13",
       {"cublasGemmEx", "cublasGemmStridedBatchedEx", "cublasSgemm_v2", "cublasHgemm",
        "cublasSgemmStridedBatched", "cublasHgemmStridedBatched", "cublasCreate_v2",
        "cublasSetStream_v2"},
       {"cublas", "libcublas.so.13"}},
      {"libcublasLt.so.13",
       "libcublasLt.so.13",
       {"cublasLtMatmul", "cublasLtMatrixLayoutGetAttribute", "cublasLtMatmulDescGetAttribute",
        "cublasLtMatmulAlgoGetHeuristic"},
       {"cublasLt", "libcublasLt.so.13"}},
      {"libnccl.so.2",
       "",
       {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast", "ncclSend",
        "ncclRecv", "ncclGroupStart", "ncclGroupEnd", "ncclCommInitRank", "ncclCommSplit",
        "ncclGetVersion"},
       {"nccl"}},
  };
  for (const auto& c : cases) {
    std::vector<std::string> syms;
    ASSERT_TRUE(dynamic_symbols(std::string(SIM_LIB_DIR) + "/" + c.file, &syms)) << c.file;
    for (const char* name : c.expected) {
      const std::string want = *c.version != '\0' ? std::string(name) + "@@" + c.version : name;
      EXPECT_TRUE(has(syms, want)) << c.file << " lacks " << want;
    }
    for (const auto& s : syms) {
      bool ok = false;
      for (const char* p : c.prefixes) ok = ok || s.rfind(p, 0) == 0;
      EXPECT_TRUE(ok) << c.file << " exports unexpected " << s;
      if (*c.version == '\0') {
        EXPECT_EQ(s.find('@'), std::string::npos) << s;
      }
    }
  }
}

TEST(SymbolVersions, TrainerKeepsTheLibrariesOutOfTheGlobalScope) {
  Child trainer({SIM_TRAINER, "--steps", "1"},
                {"XPU_TIMER_SIM_CHECK_SCOPE=1",
                 "XPU_TIMER_SIM_JOB_ID=" + xpu_timer::simgpu::testing::unique_job_id()});
  ASSERT_EQ(trainer.wait_exit_code(20s), 0) << trainer.output();
  EXPECT_NE(trainer.output().find("global scope: ncclAllReduce=absent cublasGemmEx=absent"),
            std::string::npos)
      << trainer.output();
}

}  // namespace
