// simgpu_rank_helper MODE ...: a rank process for the simgpu tests, linked
// directly against the simulated libraries.
//   allreduce RANK NRANKS COUNT   COUNT all-reduces, sync, prints "done"
//   init-only RANK NRANKS         joins the communicator, prints "ready",
//                                 never issues a collective; waits to be killed
//   exit-pending                  leaves a one-hour kernel pending and exits
//                                 (the process must not hang at exit)
//   extras                        every sim_workload entry point (RANK/WORLD_SIZE)
//   gpu-times                     exact simulated times of a GemmEx, an LtMatmul, a
//                                 strided-batched SGEMM, a launched kernel, a memset
//   link-times                    (2 ranks, RANK) exact simulated arrival and end of
//                                 an all-reduce, then the end of a send 0 -> 1
// The communicator id comes from XPU_TIMER_SIM_JOB_ID via sim_make_unique_id.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>

#include "tests/simgpu/sim_ext.h"
#include "tests/simgpu/sim_workload.h"

namespace {

int usage() {
  fprintf(stderr,
          "usage: simgpu_rank_helper allreduce|init-only|exit-pending|extras|gpu-times|link-times "
          "...\n");
  return 2;
}

bool init_comm(ncclComm_t* comm, int rank, int nranks) {
  ncclUniqueId id;
  const char* job = getenv("XPU_TIMER_SIM_JOB_ID");
  sim_make_unique_id(job != nullptr ? job : "nojob", reinterpret_cast<unsigned char*>(id.internal));
  const ncclResult_t r = ncclCommInitRank(comm, nranks, id, rank);
  if (r != ncclSuccess) {
    fprintf(stderr, "ncclCommInitRank: %s (%s)\n", ncclGetErrorString(r),
            ncclGetLastError(nullptr));
    return false;
  }
  return true;
}

int run_allreduce(int rank, int nranks, int count) {
  ncclComm_t comm = nullptr;
  if (!init_comm(&comm, rank, nranks)) return 1;
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  for (int i = 0; i < count; ++i) {
    if (ncclAllReduce(nullptr, nullptr, 1 << 20, ncclFloat32, ncclSum, comm, stream) !=
        ncclSuccess) {
      return 1;
    }
  }
  if (cudaStreamSynchronize(stream) != cudaSuccess) return 1;
  ncclCommDestroy(comm);
  printf("done\n");
  return 0;
}

int run_init_only(int rank, int nranks) {
  ncclComm_t comm = nullptr;
  if (!init_comm(&comm, rank, nranks)) return 1;
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();  // killed by the test
}

// Exact simulated times on one stream. A gate task holds the stream until
// release(), so each task enqueued before then starts when the one before it
// ended, never at its own host enqueue time (however late this process is
// scheduled); a probe records the simulated time the stream reached it and
// takes none.
class StreamTimes {
 public:
  explicit StreamTimes(cudaStream_t stream) : stream_(stream), opened_(open_.get_future()) {
    ok_ = xpu_sim_enqueue_task(stream_, &StreamTimes::gate, &opened_, nullptr, nullptr) ==
          cudaSuccess;
  }
  // Where the stream stands at this point of its work; valid after release().
  const uint64_t* probe() {
    times_.push_back(0);
    ok_ &= xpu_sim_enqueue_task(stream_, &StreamTimes::record, &times_.back(), nullptr, nullptr) ==
           cudaSuccess;
    return &times_.back();
  }
  // Opens the gate and waits for the stream; false if any enqueue failed.
  bool release() {
    open_.set_value();
    return cudaStreamSynchronize(stream_) == cudaSuccess && ok_;
  }

 private:
  static uint64_t gate(void* arg, uint64_t) {
    static_cast<std::future<void>*>(arg)->wait();
    return xpu_sim_now_ns();  // later than every enqueue before release()
  }
  static uint64_t record(void* arg, uint64_t start_ns) {
    *static_cast<uint64_t*>(arg) = start_ns;
    return start_ns;
  }
  cudaStream_t stream_;
  std::promise<void> open_;
  std::future<void> opened_;
  std::deque<uint64_t> times_;  // deque: push_back keeps the probes' addresses
  bool ok_ = false;
};

void user_kernel() {}

int run_gpu_times() {
  const int n = 1024;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout = nullptr;  // n x n: A, B and D alike
  void* dev = nullptr;
  float one = 1, buf[4] = {};
  if (cudaStreamCreate(&stream) != cudaSuccess || cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(blas, stream) != CUBLAS_STATUS_SUCCESS ||
      cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, n, n, n) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc(&dev, 1 << 20) != cudaSuccess) {
    fprintf(stderr, "gpu-times: setup failed\n");
    return 1;
  }
  StreamTimes t(stream);
  const uint64_t* p0 = t.probe();
  bool issued = cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, buf, CUDA_R_32F, n, buf,
                             CUDA_R_32F, n, &one, buf, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  const uint64_t* p1 = t.probe();
  issued &= cublasLtMatmul(lt, desc, &one, buf, layout, buf, layout, &one, buf, layout, buf, layout,
                           nullptr, nullptr, 0, stream) == CUBLAS_STATUS_SUCCESS;
  const uint64_t* p2 = t.probe();
  issued &= cublasSgemmStridedBatched(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, buf, n, 0, buf,
                                      n, 0, &one, buf, n, 0, 3) == CUBLAS_STATUS_SUCCESS;
  const uint64_t* p3 = t.probe();
  issued &= cudaLaunchKernel(reinterpret_cast<const void*>(&user_kernel), dim3(1), dim3(1), nullptr,
                             0, stream) == cudaSuccess;
  const uint64_t* p4 = t.probe();
  issued &= cudaMemsetAsync(dev, 0, 1 << 20, stream) == cudaSuccess;
  const uint64_t* p5 = t.probe();
  if (!t.release() || !issued) {
    fprintf(stderr, "gpu-times: a call failed\n");
    return 1;
  }
  printf("gpu-times gemmex %llu ltmatmul %llu sgemmstridedbatched %llu kernel %llu memset %llu\n",
         static_cast<unsigned long long>(*p1 - *p0), static_cast<unsigned long long>(*p2 - *p1),
         static_cast<unsigned long long>(*p3 - *p2), static_cast<unsigned long long>(*p4 - *p3),
         static_cast<unsigned long long>(*p5 - *p4));
  return 0;
}

int run_link_times() {
  const int rank = atoi(getenv("RANK") != nullptr ? getenv("RANK") : "0");
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  if (!init_comm(&comm, rank, 2) || cudaStreamCreate(&stream) != cudaSuccess) return 1;
  StreamTimes t(stream);
  const uint64_t* arrival = t.probe();
  bool issued =
      ncclAllReduce(nullptr, nullptr, 1 << 20, ncclFloat32, ncclSum, comm, stream) == ncclSuccess;
  const uint64_t* end = t.probe();
  issued &= (rank == 0 ? ncclSend(nullptr, 1 << 20, ncclFloat32, 1, comm, stream)
                       : ncclRecv(nullptr, 1 << 20, ncclFloat32, 0, comm, stream)) == ncclSuccess;
  const uint64_t* p2p_end = t.probe();
  if (!t.release() || !issued) {
    fprintf(stderr, "link-times: a call failed (%s)\n", ncclGetLastError(comm));
    return 1;
  }
  ncclCommDestroy(comm);
  printf("link-times rank %d arrival %llu end %llu p2p-end %llu\n", rank,
         static_cast<unsigned long long>(*arrival), static_cast<unsigned long long>(*end),
         static_cast<unsigned long long>(*p2p_end));
  return 0;
}

int run_exit_pending() {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  xpu_sim_launch_kernel(stream, 3600ull * 1000000000ull);
  printf("exiting with a pending kernel\n");
  fflush(stdout);
  exit(0);
}

#define CHECK_SIM(call)                                            \
  do {                                                             \
    if ((call) != 0) {                                             \
      fprintf(stderr, "%s failed: %s\n", #call, sim_last_error()); \
      return 1;                                                    \
    }                                                              \
  } while (0)

int run_extras() {
  const int rank = atoi(getenv("RANK") != nullptr ? getenv("RANK") : "0");
  const int world = atoi(getenv("WORLD_SIZE") != nullptr ? getenv("WORLD_SIZE") : "1");
  CHECK_SIM(sim_init(rank, world, rank));
  for (int api = 0; api < SIM_GEMM_API_COUNT; ++api) CHECK_SIM(sim_gemm(256, 256, 256, 2, api));
  CHECK_SIM(sim_group_allreduce(3, 1 << 20));
  CHECK_SIM(sim_sendrecv_ring(1 << 20));
  CHECK_SIM(sim_split_allreduce(2, 1 << 20));
  CHECK_SIM(sim_split_allreduce(2, 1 << 20));
  CHECK_SIM(sim_capture_gemm(512, 512, 512));
  for (int kind = SIM_H2D; kind <= SIM_D2D; ++kind) CHECK_SIM(sim_memcpy(1 << 20, kind));
  for (int c = SIM_ALLREDUCE; c <= SIM_REDUCE; ++c) CHECK_SIM(sim_collective(c, 1 << 20));
  CHECK_SIM(sim_sync());
  CHECK_SIM(sim_finalize());
  printf("extras ok rank %d\n", rank);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const char* mode = argv[1];
  if (strcmp(mode, "allreduce") == 0 && argc == 5) {
    return run_allreduce(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
  }
  if (strcmp(mode, "init-only") == 0 && argc == 4)
    return run_init_only(atoi(argv[2]), atoi(argv[3]));
  if (strcmp(mode, "exit-pending") == 0) return run_exit_pending();
  if (strcmp(mode, "extras") == 0) return run_extras();
  if (strcmp(mode, "gpu-times") == 0) return run_gpu_times();
  if (strcmp(mode, "link-times") == 0) return run_link_times();
  return usage();
}
