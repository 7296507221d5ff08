// The real-GPU traits of the simulated runtime (real_gpu_traits.h): a rank's
// fixed skew after a cross-stream wait, and a second process sharing the
// GPU. Its own executable: the runtime reads the variables once.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/simgpu/sim_ext.h"

namespace {

constexpr uint64_t kMs = 1000000;

std::string share_dir() {
  static const std::string dir = [] {
    std::string d =
        (std::filesystem::temp_directory_path() / ("sim-traits-" + std::to_string(getpid())))
            .string();
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// Set before the runtime's first call reads them: rank 0 of 4 has the
// largest share of the skew, (5 x 0 + 3) mod 4 = 3 of 3.
const bool g_env = [] {
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("XPU_TIMER_SIM_RANK_SKEW_US", "3000", 1);
  setenv("XPU_TIMER_SIM_GPU_SHARE_DIR", share_dir().c_str(), 1);
  return true;
}();

// The simulated time of a kernel of `ns` on `s`, after a gate kernel (the
// stream busy while the host issues the rest).
float timed_kernel_ms(cudaStream_t s, uint64_t ns) {
  cudaEvent_t a = nullptr, b = nullptr;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  xpu_sim_launch_kernel(s, 20 * kMs);
  cudaEventRecord(a, s);
  xpu_sim_launch_kernel(s, ns);
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms = -1;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms;
}

TEST(RealGpuTraits, ASecondProcessOnTheGpuSlowsItsKernelsWhileItIsThere) {
  ASSERT_TRUE(g_env);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  EXPECT_NEAR(timed_kernel_ms(s, 40 * kMs), 40.0, 0.5);
  const std::string file = share_dir() + "/gpu-0";
  FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("1.5\n", f);
  std::fclose(f);
  // The file is looked at once 10 ms of stream time have passed: the gate
  // kernel of the next measurement takes 20.
  EXPECT_NEAR(timed_kernel_ms(s, 40 * kMs), 100.0, 0.5);
  std::filesystem::remove(file);
  EXPECT_NEAR(timed_kernel_ms(s, 40 * kMs), 40.0, 0.5);
  cudaStreamDestroy(s);
  std::filesystem::remove_all(share_dir());
}

TEST(RealGpuTraits, AStreamResumesTheRanksSkewAfterTheEventItWaitsFor) {
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaStreamCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&b), cudaSuccess);
  cudaEvent_t done = nullptr, resumed = nullptr;
  ASSERT_EQ(cudaEventCreate(&done), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&resumed), cudaSuccess);
  ASSERT_EQ(xpu_sim_launch_kernel(a, 20 * kMs), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(done, a), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(b, done, 0), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(resumed, b), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(resumed), cudaSuccess);
  float ms = -1;
  ASSERT_EQ(cudaEventElapsedTime(&ms, done, resumed), cudaSuccess);
  EXPECT_NEAR(ms, 3.0, 0.01);  // rank 0's share of 3000 us: all of it
  cudaEventDestroy(done);
  cudaEventDestroy(resumed);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

}  // namespace
