// Streams and events of the simulated CUDA runtime: ordering, timing,
// error codes as the real runtime returns them, capture, exit with work
// pending.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>

#include "tests/harness/child_process.h"
#include "tests/simgpu/sim_ext.h"

namespace {

using xpu_timer::testing::Child;

constexpr uint64_t kMs = 1000000;

// Timing tests put a "gate" kernel first: the stream stays busy while the
// host issues the rest, so host scheduling delays on a loaded CI machine do
// not open gaps between the timed kernels (on a GPU they would, too).

class StreamEventTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&start_), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&end_), cudaSuccess);
  }
  void TearDown() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(end_);
    cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t end_ = nullptr;
};

TEST_F(StreamEventTest, EventsCompleteInStreamOrderAndTimeTheKernel) {
  // The gate: a host descheduled between the start event and the kernel
  // (a loaded machine) would otherwise open a gap the elapsed time counts.
  ASSERT_EQ(xpu_sim_launch_kernel(stream_, 50 * kMs), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
  ASSERT_EQ(xpu_sim_launch_kernel(stream_, 150 * kMs), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(end_, stream_), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(end_), cudaErrorNotReady);
  EXPECT_EQ(cudaStreamQuery(stream_), cudaErrorNotReady);
  ASSERT_EQ(cudaEventSynchronize(start_), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(start_), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(end_), cudaErrorNotReady);  // still behind the kernel
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start_, end_), cudaErrorNotReady);
  ASSERT_EQ(cudaEventSynchronize(end_), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(end_), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start_, end_), cudaSuccess);
  EXPECT_NEAR(ms, 150.0, 150.0 * 0.02);
  EXPECT_EQ(cudaStreamQuery(stream_), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // NotReady is not an error
}

TEST_F(StreamEventTest, BackToBackKernelsAddUp) {
  ASSERT_EQ(xpu_sim_launch_kernel(stream_, 30 * kMs), cudaSuccess);  // gate: see below
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(xpu_sim_launch_kernel(stream_, 2 * kMs), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(end_, stream_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start_, end_), cudaSuccess);
  EXPECT_NEAR(ms, 40.0, 40.0 * 0.02);
}

TEST_F(StreamEventTest, ErrorCodesMatchTheRuntime) {
  // A never-recorded event is complete for Query, but has no time.
  EXPECT_EQ(cudaEventQuery(start_), cudaSuccess);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start_, end_), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // taken
  cudaEvent_t untimed = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(untimed, stream_), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(end_, stream_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, untimed, end_), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidResourceHandle);  // peek keeps it
  cudaGetLastError();
  EXPECT_EQ(cudaEventDestroy(untimed), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(nullptr, start_, end_), cudaErrorInvalidValue);
  EXPECT_EQ(cudaSetDevice(100000), cudaErrorInvalidDevice);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");
  cudaGetLastError();
}

TEST_F(StreamEventTest, ReRecordingMakesTheEventPendingAgain) {
  ASSERT_EQ(cudaEventRecord(end_, stream_), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(end_), cudaSuccess);
  ASSERT_EQ(xpu_sim_launch_kernel(stream_, 100 * kMs), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(end_, stream_), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(end_), cudaErrorNotReady);
  ASSERT_EQ(cudaEventSynchronize(end_), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(end_), cudaSuccess);
}

TEST_F(StreamEventTest, StreamWaitEventOrdersAcrossStreams) {
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(xpu_sim_launch_kernel(stream_, 30 * kMs), cudaSuccess);  // gate: see below
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
  ASSERT_EQ(xpu_sim_launch_kernel(stream_, 80 * kMs), cudaSuccess);
  cudaEvent_t mid = nullptr;
  ASSERT_EQ(cudaEventCreate(&mid), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(mid, stream_), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(other, mid, 0), cudaSuccess);
  ASSERT_EQ(xpu_sim_launch_kernel(other, 20 * kMs), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(end_, other), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(end_), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(mid), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start_, end_), cudaSuccess);
  EXPECT_NEAR(ms, 100.0, 100.0 * 0.03);
  cudaEventDestroy(mid);
  cudaStreamDestroy(other);
}

TEST_F(StreamEventTest, HostFunctionsAndCopiesRunInOrder) {
  std::vector<char> src(1 << 16, 'x'), dst(1 << 16, 0);
  std::atomic<int> order{0};
  int seen_at = -1;
  struct Ctx {
    std::atomic<int>* order;
    int* seen_at;
    const char* dst;
  } ctx{&order, &seen_at, dst.data()};
  ASSERT_EQ(cudaMemcpyAsync(dst.data(), src.data(), src.size(), cudaMemcpyHostToDevice, stream_),
            cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(
                stream_,
                [](void* p) {
                  auto* c = static_cast<Ctx*>(p);
                  *c->seen_at = c->dst[100] == 'x' ? c->order->fetch_add(1) : -2;
                },
                &ctx),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_EQ(seen_at, 0);
  EXPECT_EQ(memcmp(src.data(), dst.data(), src.size()), 0);
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 4096), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dev, 7, 4096, stream_), cudaSuccess);
  char back[4096];
  ASSERT_EQ(cudaMemcpy(back, dev, sizeof(back), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(back, dev, sizeof(back), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back[4095], 7);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
}

TEST_F(StreamEventTest, CaptureRecordsKernelsInsteadOfRunningThem) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  ASSERT_EQ(cudaStreamIsCapturing(stream_, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaStreamIsCapturing(stream_, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  unsigned long long id = 0;
  ASSERT_EQ(cudaStreamGetCaptureInfo(stream_, &status, &id), cudaSuccess);
  EXPECT_NE(id, 0u);
  const uint64_t before = xpu_sim_captured_kernel_count();
  ASSERT_EQ(xpu_sim_launch_kernel(stream_, 50 * kMs), cudaSuccess);
  EXPECT_EQ(xpu_sim_captured_kernel_count(), before + 1);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaErrorStreamCaptureUnsupported);
  cudaGetLastError();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(stream_), cudaSuccess);  // nothing ran
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start_, stream_), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(end_, stream_), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start_, end_), cudaSuccess);
  EXPECT_NEAR(ms, 50.0, 50.0 * 0.02);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal),
            cudaErrorStreamCaptureUnsupported);
  cudaGetLastError();
}

TEST(SimRuntime, DefaultStreamAliasesAndDeviceQueries) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_GE(count, 1);
  int version = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
  EXPECT_EQ(version, CUDART_VERSION);
  cudaEvent_t e = nullptr;
  ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
  for (cudaStream_t s :
       {static_cast<cudaStream_t>(nullptr), cudaStreamLegacy, cudaStreamPerThread}) {
    ASSERT_EQ(xpu_sim_launch_kernel(s, kMs), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(nullptr), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  cudaEventDestroy(e);
}

TEST(SimRuntime, ProcessExitsPromptlyWithAKernelPending) {
  Child child({SIM_RANK_HELPER, "exit-pending"});
  const auto status = child.wait_for(std::chrono::seconds(5));
  ASSERT_TRUE(status.has_value()) << "exit hung: " << child.output();
  EXPECT_EQ(status->shell_code(), 0) << child.output();
  EXPECT_NE(child.output().find("exiting with a pending kernel"), std::string::npos);
}

}  // namespace
