// Checks the interposition contract against the REAL CUDA 13 libraries
// (no GPU needed): a program that imports the hooked names exactly as
// PyTorch does (versioned cuBLAS/cuBLASLt, unversioned NCCL) binds every one
// of them to libxpu_timer_inject.so when it is preloaded, and the statuses
// the real libraries return are passed back unchanged.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/env_names.h"
#include "tests/harness/child_process.h"

namespace xpu_timer::inject {
namespace {

using xpu_timer::testing::Child;
using xpu_timer::testing::read_file;

constexpr std::chrono::seconds kTimeout(60);

// Environment entries: the injected library preloaded or not, never a supervisor.
const std::string kNoSupervisor = std::string(proto::kEnvSocket) + "=";
const std::string kNoPreload = std::string(proto::kEnvPreload) + "=";
const std::string kPreloadInject = std::string(proto::kEnvPreload) + "=" + INJECT_LIB;

struct Hook {
  const char* name;
  const char* version;  // as libtorch_cuda imports it; "" = unversioned
};

const Hook kHooks[] = {
    {"cublasGemmEx", "libcublas.so.13"},
    {"cublasGemmStridedBatchedEx", "libcublas.so.13"},
    {"cublasSgemm_v2", "libcublas.so.13"},
    {"cublasHgemm", "libcublas.so.13"},
    {"cublasSgemmStridedBatched", "libcublas.so.13"},
    {"cublasHgemmStridedBatched", "libcublas.so.13"},
    {"cublasLtMatmul", "libcublasLt.so.13"},
    {"ncclAllReduce", ""},
    {"ncclAllGather", ""},
    {"ncclReduceScatter", ""},
    {"ncclBroadcast", ""},
    {"ncclReduce", ""},
    {"ncclSend", ""},
    {"ncclRecv", ""},
    {"ncclGroupStart", ""},
    {"ncclGroupEnd", ""},
    {"ncclCommInitRank", ""},
    {"ncclCommInitRankConfig", ""},
    {"ncclCommInitRankScalable", ""},
    {"ncclCommSplit", ""},
    {"ncclCommDestroy", ""},
    {"ncclCommAbort", ""},
    {"cudaLaunchKernel", "libcudart.so.13"},
    {"__cudaLaunchKernel", "libcudart.so.13"},
    {"cudaLaunchKernelExC", "libcudart.so.13"},
    {"cudaLaunchCooperativeKernel", "libcudart.so.13"},
    {"cudaMalloc", "libcudart.so.13"},
    {"cudaMallocAsync", "libcudart.so.13"},
    {"cudaMallocFromPoolAsync", "libcudart.so.13"},
    {"cudaFree", "libcudart.so.13"},
    {"cudaFreeAsync", "libcudart.so.13"},
    {"cudaMemcpy", "libcudart.so.13"},
    {"cudaMemcpyAsync", "libcudart.so.13"},
    {"cudaMemcpyPeer", "libcudart.so.13"},
    {"cudaMemcpyPeerAsync", "libcudart.so.13"},
    {"cudaStreamSynchronize", "libcudart.so.13"},
    {"cudaEventSynchronize", "libcudart.so.13"},
    {"cudaDeviceSynchronize", "libcudart.so.13"},
};

// Runs the probe with LD_DEBUG=bindings into a file; returns the log.
std::string bindings_log(bool preload, std::string* output) {
  char dir_tmpl[] = "/tmp/xpu_inject_bind_XXXXXX";
  if (mkdtemp(dir_tmpl) == nullptr) return "";
  const std::string prefix = std::string(dir_tmpl) + "/ld";
  std::vector<std::string> env = {"LD_DEBUG=bindings", "LD_DEBUG_OUTPUT=" + prefix,
                                  "LD_BIND_NOW=1", kNoSupervisor,
                                  preload ? kPreloadInject : kNoPreload};
  Child child({BINDING_PROBE}, env);
  const pid_t pid = child.pid();
  const int rc = child.wait_exit_code(kTimeout);
  *output = child.output();
  if (rc != 0) return "";
  const std::string log_path = prefix + "." + std::to_string(pid);
  std::string log = read_file(log_path);
  unlink(log_path.c_str());
  rmdir(dir_tmpl);
  return log;
}

// The binding line of the probe's own reference to `name`.
std::string probe_binding(const std::string& log, const Hook& h) {
  std::istringstream in(log);
  std::string line;
  const std::string sym = std::string("normal symbol `") + h.name + "'";
  while (std::getline(in, line)) {
    if (line.find("binding file " BINDING_PROBE " ") != std::string::npos &&
        line.find(sym) != std::string::npos) {
      return line;
    }
  }
  return "";
}

class BindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(BINDING_PROBE, X_OK) != 0) GTEST_SKIP() << "real CUDA libraries not available";
  }
};

TEST_F(BindingTest, EveryImportBindsToTheHooksWhenPreloaded) {
  std::string out;
  const std::string log = bindings_log(true, &out);
  ASSERT_FALSE(log.empty()) << out;
  for (const Hook& h : kHooks) {
    SCOPED_TRACE(h.name);
    const std::string line = probe_binding(log, h);
    ASSERT_FALSE(line.empty()) << "no binding of the probe's reference";
    EXPECT_NE(line.find(std::string("to ") + INJECT_LIB + " [0]"), std::string::npos) << line;
    if (h.version[0] != '\0') {
      // The reference is versioned, and still our unversioned definition wins.
      EXPECT_NE(line.find(std::string("[") + h.version + "]"), std::string::npos) << line;
    }
  }
}

TEST_F(BindingTest, WithoutThePreloadTheSameImportsBindToTheRealLibraries) {
  std::string out;
  const std::string log = bindings_log(false, &out);
  ASSERT_FALSE(log.empty()) << out;
  for (const Hook& h : kHooks) {
    SCOPED_TRACE(h.name);
    const std::string line = probe_binding(log, h);
    ASSERT_FALSE(line.empty());
    const bool real = line.find("libcudart.so.13 [0]") != std::string::npos ||
                      line.find("libcublas.so.13 [0]") != std::string::npos ||
                      line.find("libcublasLt.so.13 [0]") != std::string::npos ||
                      line.find("libnccl.so.2 [0]") != std::string::npos;
    EXPECT_TRUE(real) << line;
  }
}

TEST_F(BindingTest, StatusesOfTheRealLibrariesAreReturnedUnchanged) {
  auto plain = Child::start({BINDING_PROBE, "call"}, {kNoPreload, kNoSupervisor});
  ASSERT_EQ(plain->wait_exit_code(kTimeout), 0) << plain->output();
  auto hooked = Child::start({BINDING_PROBE, "call"}, {kPreloadInject, kNoSupervisor});
  ASSERT_EQ(hooked->wait_exit_code(kTimeout), 0) << hooked->output();
  // Keep only the probe's status lines (the hooked run also logs one line).
  auto statuses = [](const std::string& s) {
    std::istringstream in(s);
    std::string line, out;
    while (std::getline(in, line)) {
      if (line.rfind("cublas", 0) == 0 || line.rfind("nccl", 0) == 0) out += line + "\n";
    }
    return out;
  };
  EXPECT_EQ(statuses(hooked->output()), statuses(plain->output()));
  // Same statuses because the hooks reached the real functions, not because
  // they failed to find them (they would then also answer NOT_INITIALIZED).
  EXPECT_EQ(hooked->output().find("cannot find the real"), std::string::npos) << hooked->output();
  EXPECT_NE(statuses(plain->output()).find("cublasGemmEx"), std::string::npos) << plain->output();
}

}  // namespace
}  // namespace xpu_timer::inject
