// simgpu_rank_helper MODE ...: a rank process for the simgpu tests, linked
// directly against the simulated libraries.
//   allreduce RANK NRANKS COUNT   COUNT all-reduces, sync, prints "done"
//   init-only RANK NRANKS         joins the communicator, prints "ready",
//                                 never issues a collective; waits to be killed
//   exit-pending                  leaves a one-hour kernel pending and exits
//                                 (the process must not hang at exit)
//   extras                        every sim_workload entry point (RANK/WORLD_SIZE)
// The communicator id comes from XPU_TIMER_SIM_JOB_ID via sim_make_unique_id.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/simgpu/sim_ext.h"
#include "tests/simgpu/sim_workload.h"

namespace {

int usage() {
  fprintf(stderr, "usage: simgpu_rank_helper allreduce|init-only|exit-pending|extras ...\n");
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
  return usage();
}
