// Simulated NCCL across processes: collectives meet through shared memory;
// a rank that never arrives leaves the others pending; the workload's
// group, ring, split, capture and memcpy paths work across 4 ranks.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/child_process.h"
#include "tests/simgpu/rendezvous.h"
#include "tests/simgpu/sim_segments.h"
#include "tests/simgpu/sim_workload.h"

namespace {

namespace t = xpu_timer::simgpu::testing;
using xpu_timer::testing::Child;
using namespace std::chrono_literals;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TEST(NcclRendezvous, TwoProcessAllReduceCompletes) {
  const std::string job = t::unique_job_id();
  const std::string env = "XPU_TIMER_SIM_JOB_ID=" + job;
  Child r0({SIM_RANK_HELPER, "allreduce", "0", "2", "20"}, {env});
  Child r1({SIM_RANK_HELPER, "allreduce", "1", "2", "20"}, {env});
  ASSERT_EQ(r0.wait_exit_code(20s), 0) << r0.output();
  ASSERT_EQ(r1.wait_exit_code(20s), 0) << r1.output();
  EXPECT_NE(r0.output().find("done"), std::string::npos);
  // Both ranks destroyed the communicator: the last one removed the segment.
  EXPECT_EQ(t::count_segments(job), 0);
  t::remove_segments(job);
}

// The segment is sized to its communicator, not to a fixed 64 ranks: its
// tables follow each other without overlap up to its end, a rank may touch
// the last entry of each, and a smaller communicator's open does not shrink
// a segment found larger (its header then tells it apart).
TEST(NcclRendezvous, TheSegmentIsSizedToItsCommunicator) {
  namespace s = xpu_timer::simgpu;
  const std::string job = t::unique_job_id();
  for (const int n : {1, 64, 1024}) {
    const std::string name = "xpu_sim_" + job + "_" + std::to_string(n);
    std::string error;
    std::unique_ptr<s::SharedSegment> seg(s::SharedSegment::open(name, n, &error));
    ASSERT_NE(seg, nullptr) << error;
    struct stat st {};
    ASSERT_EQ(stat(("/dev/shm/" + name).c_str(), &st), 0);
    EXPECT_EQ(static_cast<size_t>(st.st_size), s::segment_bytes(n));
    const auto at = [](const auto& x) { return reinterpret_cast<const char*>(&x); };
    const char* base = at(seg->header());
    EXPECT_LE(base + sizeof(s::SegmentHeader), at(seg->slot(0)));
    EXPECT_LE(at(seg->slot(n - 1)) + sizeof(s::RankSlot), at(seg->sent(0, 0)));
    EXPECT_LE(at(seg->sent(n - 1, n - 1)) + sizeof(uint64_t), at(seg->send_time(0, 0, 0)));
    EXPECT_EQ(at(seg->send_time(n - 1, n - 1, s::kSendTimes - 1)) + sizeof(s::SendTime),
              base + s::segment_bytes(n));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(&seg->slot(n - 1)) % alignof(s::RankSlot), 0u);
    seg->slot(n - 1).pid.store(7);
    seg->sent(n - 1, 0).store(3);
    seg->send_time(n - 1, n - 1, 5).start_ns.store(11);
    std::unique_ptr<s::SharedSegment> small(s::SharedSegment::open(name, 1, &error));
    ASSERT_NE(small, nullptr) << error;
    ASSERT_EQ(stat(("/dev/shm/" + name).c_str(), &st), 0);
    EXPECT_EQ(static_cast<size_t>(st.st_size), s::segment_bytes(n));
    EXPECT_EQ(seg->send_time(n - 1, n - 1, 5).start_ns.load(), 11u);
    seg->unlink();
  }
  t::remove_segments(job);
}

TEST(NcclRendezvous, CollectiveStaysPendingWhileARankNeverArrives) {
  const std::string job = t::unique_job_id();
  ASSERT_EQ(setenv("XPU_TIMER_SIM_JOB_ID", job.c_str(), 1), 0);
  Child peer({SIM_RANK_HELPER, "init-only", "1", "2"}, {"XPU_TIMER_SIM_JOB_ID=" + job});

  // Rank 0 here. Init blocks until the peer joined; bound it.
  auto joined = std::make_shared<std::promise<ncclComm_t>>();
  auto joined_future = joined->get_future();
  std::thread([joined, job] {
    ncclUniqueId id;
    sim_make_unique_id(job.c_str(), reinterpret_cast<unsigned char*>(id.internal));
    ncclComm_t comm = nullptr;
    joined->set_value(ncclCommInitRank(&comm, 2, id, 0) == ncclSuccess ? comm : nullptr);
  }).detach();
  ASSERT_EQ(joined_future.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "ncclCommInitRank did not return: " << peer.output();
  ncclComm_t comm = joined_future.get();
  ASSERT_NE(comm, nullptr);
  ASSERT_TRUE(peer.wait_for_output("ready", 10s)) << peer.output();

  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&done), cudaSuccess);
  ASSERT_EQ(ncclAllReduce(nullptr, nullptr, 1024, ncclFloat32, ncclSum, comm, stream), ncclSuccess);
  ASSERT_EQ(cudaEventRecord(done, stream), cudaSuccess);
  const double start = now_s();
  while (now_s() - start < 1.2) {
    ASSERT_EQ(cudaEventQuery(done), cudaErrorNotReady);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady);
  // Abort releases the pending work, as ncclCommAbort does on a GPU.
  ASSERT_EQ(ncclCommAbort(comm), ncclSuccess);
  ASSERT_EQ(cudaEventSynchronize(done), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(done), cudaSuccess);
  cudaEventDestroy(done);
  cudaStreamDestroy(stream);
  t::remove_segments(job);
}

TEST(NcclRendezvous, CommunicatorQueriesAndArgumentChecks) {
  const std::string job = t::unique_job_id();
  ASSERT_EQ(setenv("XPU_TIMER_SIM_JOB_ID", job.c_str(), 1), 0);
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, 22809);
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
  int count = 0, rank = -1, device = -1;
  EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(comm, &rank), ncclSuccess);
  EXPECT_EQ(ncclCommCuDevice(comm, &device), ncclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(device, 0);
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_EQ(
      ncclAllReduce(nullptr, nullptr, 8, static_cast<ncclDataType_t>(99), ncclSum, comm, nullptr),
      ncclInvalidArgument);
  EXPECT_EQ(ncclSend(nullptr, 8, ncclFloat32, 5, comm, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 8, ncclFloat32, ncclSum, nullptr, nullptr),
            ncclInvalidArgument);
  EXPECT_STRNE(ncclGetErrorString(ncclInvalidArgument), "");
  ncclComm_t child = nullptr;
  ASSERT_EQ(ncclCommSplit(comm, 0, 0, &child, nullptr), ncclSuccess);
  ASSERT_NE(child, nullptr);
  ncclComm_t none = reinterpret_cast<ncclComm_t>(1);
  ASSERT_EQ(ncclCommSplit(comm, NCCL_SPLIT_NOCOLOR, 0, &none, nullptr), ncclSuccess);
  EXPECT_EQ(none, nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclRecv(nullptr, 8, ncclFloat32, 0, child, nullptr), ncclSuccess);
  ASSERT_EQ(ncclSend(nullptr, 8, ncclFloat32, 0, child, nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(t::count_segments(job), 0);
  t::remove_segments(job);
}

TEST(NcclRendezvous, WorkloadExtrasAcrossFourRanks) {
  const std::string job = t::unique_job_id();
  auto launch =
      Child::start({SIM_LAUNCH, "--nproc", "4", "--job-id", job, "--", SIM_RANK_HELPER, "extras"});
  ASSERT_EQ(launch->wait_exit_code(30s), 0) << launch->output();
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(launch->output().find("extras ok rank " + std::to_string(r)), std::string::npos)
        << launch->output();
  }
  EXPECT_EQ(t::count_segments(job), 0);
}

}  // namespace
