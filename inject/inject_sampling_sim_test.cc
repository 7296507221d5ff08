// What a sampled-out call costs the user's thread, counted at the simulated
// libraries: a GEMM, a cuBLASLt matmul or a cudaMemcpyDefault copy that is
// not timed makes none of the library calls the injected library makes to
// describe or time a call (the handle's stream, the layouts' attributes,
// the pointers' kinds); a timed one makes them all. docs/architecture.md
// "The hot path", 4.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/protocol.h"
#include "inject/testdata/fake_supervisor.h"
#include "tests/harness/child_process.h"
#include "tests/simgpu/sim_ext.h"

namespace xpu_timer::inject {
namespace {

using proto::DType;
using proto::OpName;
using testing::FakeSupervisor;
using testing::find_metric;
using testing::RegisteredRank;
using xpu_timer::testing::Child;

constexpr std::chrono::seconds kTimeout{30};

// The driver's "CALLS a b c d e" line: XpuSimCountedCall counts.
std::vector<uint64_t> counted_calls(const std::string& out) {
  std::vector<uint64_t> v(XPU_SIM_COUNTED_CALLS);
  const size_t at = out.find("CALLS ");
  if (at == std::string::npos) return {};
  unsigned long c[XPU_SIM_COUNTED_CALLS] = {};
  if (std::sscanf(out.c_str() + at, "CALLS %lu %lu %lu %lu %lu", &c[0], &c[1], &c[2], &c[3],
                  &c[4]) != XPU_SIM_COUNTED_CALLS) {
    return {};
  }
  for (int i = 0; i < XPU_SIM_COUNTED_CALLS; ++i) v[i] = c[i];
  return v;
}

TEST(InjectSimSampling, SampledOutCallsMakeNoLibraryCallsOfOurs) {
  if (access(INJECT_LIB, R_OK) != 0 || access(SIM_LIB_DIR "/libsim_workload.so", R_OK) != 0) {
    GTEST_SKIP() << "inject library or simulated GPU not built";
  }
  FakeSupervisor sup;
  ASSERT_TRUE(sup.ok()) << "cannot listen on a unix socket in /tmp";
  std::vector<std::string> env = sup.env();
  env.push_back(std::string(proto::kEnvPreload) + "=" + INJECT_LIB);
  env.push_back(std::string("XPU_TIMER_SIM_LIB_DIR=") + SIM_LIB_DIR);
  env.push_back("XPU_TIMER_SIM_JOB_ID=sampling-" + std::to_string(getpid()));
  // One timing per second and shape: most of the 300 calls of each are not
  // timed (on a loaded machine a few more are; the counts below hold for any
  // number of timed calls).
  env.push_back("XPU_TIMER_SAMPLE_PER_SEC=1");
  for (const char* v : {"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=1", "LOCAL_WORLD_SIZE=1"}) {
    env.push_back(v);
  }
  // The copies go between the same two buffers; the free in between starts
  // a new epoch of the direction cache (the address may now be another kind
  // of memory). The sim's memory is the host's: the copies must be done
  // before their buffer is freed.
  auto job = Child::start(
      {SIM_DRIVER, "init", "gemm:gemmex:64:64:64:1*300", "gemm:ltmatmul:64:32:16:1*300",
       "malloc:65536", "copy:default-h2d:4096*150", "sync", "free", "malloc:65536",
       "copy:default-h2d:4096*150", "sync", "calls", "wait"},
      env);
  ASSERT_NE(job, nullptr);
  std::string error;
  RegisteredRank* rank = sup.accept_rank(kTimeout.count(), &error);
  ASSERT_NE(rank, nullptr) << error;
  ASSERT_TRUE(job->wait_for_output("READY", kTimeout)) << job->output();
  const std::vector<uint64_t> calls = counted_calls(job->output());
  ASSERT_EQ(calls.size(), static_cast<size_t>(XPU_SIM_COUNTED_CALLS)) << job->output();

  std::unique_ptr<proto::StatusPage> p;
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  do {
    p = rank->snapshot();
    if (p != nullptr && p->completed_total == 900) break;
    usleep(2000);
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->completed_total, 900u);
  const proto::MetricSlot* gemm = find_metric(*p, OpName::kGemmEx, DType::kBF16);
  const proto::MetricSlot* lt = find_metric(*p, OpName::kLtMatmul, DType::kBF16);
  const proto::MetricSlot* copy = find_metric(*p, OpName::kMemcpyH2D, DType::kU8);
  ASSERT_TRUE(gemm != nullptr && lt != nullptr && copy != nullptr);
  EXPECT_EQ(gemm->count + gemm->untimed_count, 300u);
  EXPECT_EQ(lt->count + lt->untimed_count, 300u);
  EXPECT_EQ(copy->count + copy->untimed_count, 300u);
  EXPECT_GE(gemm->untimed_count, 1u) << "nothing was sampled out: the test proves nothing";
  // The sampled-out matmuls carry the shape the cache gave them: 2*64*32*16.
  EXPECT_EQ(lt->untimed_flops, lt->untimed_count * 2ull * 64 * 32 * 16);
  EXPECT_EQ(lt->sum_flops, lt->count * 2ull * 64 * 32 * 16);

  // cublasGetStream_v2: once per timed GEMM.
  EXPECT_EQ(calls[XPU_SIM_CUBLAS_GET_STREAM], gemm->count);
  // Layout attributes: six reads for the first matmul (the cache's miss:
  // the workload recreates equal layouts for every call), six per timed
  // one; the descriptor's TRANSA, TRANSB and compute type per timed one (a
  // bf16 matmul needs no compute type to be named; the transposes of the
  // sampled-out ones are the last timed call's).
  EXPECT_EQ(calls[XPU_SIM_LT_LAYOUT_GET], 6 + 6 * lt->count);
  EXPECT_EQ(calls[XPU_SIM_LT_DESC_GET], 3 * lt->count);
  // Two pointers per lookup: the first copy of each free epoch, and every
  // timed copy.
  EXPECT_EQ(calls[XPU_SIM_POINTER_ATTRIBUTES], 2 * 2 + 2 * copy->count);
  // The capture check stays on every timed call.
  EXPECT_EQ(calls[XPU_SIM_STREAM_IS_CAPTURING], gemm->count + lt->count + copy->count);
  EXPECT_EQ(p->hook_errors, 0u);
  job->close_stdin();
  EXPECT_EQ(job->wait_exit_code(kTimeout), 0) << job->output();
}

}  // namespace
}  // namespace xpu_timer::inject
