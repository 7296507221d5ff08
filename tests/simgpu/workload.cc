// libsim_workload.so: a tiny training program over the simulated CUDA,
// cuBLAS, cuBLASLt and NCCL (see sim_workload.h). It calls only public entry
// points, so an LD_PRELOADed hook library sees exactly what it would see
// from PyTorch.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <cstdint>
#include <cstdio>
#include <deque>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/simgpu/sim_ext.h"
#include "tests/simgpu/sim_workload.h"

namespace {

struct Workload {
  bool ready = false;
  int rank = 0;
  int world = 1;
  cudaStream_t compute = nullptr;
  cudaStream_t comm_stream = nullptr;
  cudaEvent_t compute_done = nullptr;  // orders the collective after compute work
  cudaEvent_t comm_done = nullptr;     // orders later compute work after the collective
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  ncclComm_t comm = nullptr;
  ncclComm_t split_comm = nullptr;
  int split_groups = 0;
  std::string comm_name;     // sim_set_comm_name: "" = ncclCommInitRank, no name
  std::string split_name;    // comm_name + "_split", alive while split_comm is
  // sim_subgroup_allreduce's named sub-communicators: name -> (color, comm).
  // The names live as long as the communicators (NCCL keeps the pointer).
  struct Subgroup {
    std::string name;
    int color = 0;
    ncclComm_t comm = nullptr;
  };
  std::deque<Subgroup> subgroups;
  void* operands = nullptr;  // dummy operand memory: the sim never reads it
  void* host_buf = nullptr;
  void* dev_buf = nullptr;
  size_t copy_bytes = 0;
  // sim_device_malloc's buffers, freed last first by sim_device_free.
  std::vector<void*> user_buffers;
  // sim_sync_lagged's step-end events, oldest first.
  std::deque<cudaEvent_t> step_ends;
  std::vector<char> user_host;  // host side of sim_copy
};

Workload g;
thread_local char t_error[512] = "";

int fail(const char* what, const char* detail) {
  snprintf(t_error, sizeof(t_error), "%s: %s", what, detail);
  return -1;
}

#define SIM_CUDA(call)                                                 \
  do {                                                                 \
    const cudaError_t e_ = (call);                                     \
    if (e_ != cudaSuccess) return fail(#call, cudaGetErrorString(e_)); \
  } while (0)
#define SIM_BLAS(call)                                                              \
  do {                                                                              \
    const cublasStatus_t s_ = (call);                                               \
    if (s_ != CUBLAS_STATUS_SUCCESS) return fail(#call, cublasGetStatusString(s_)); \
  } while (0)
#define SIM_NCCL(call)                                                 \
  do {                                                                 \
    const ncclResult_t r_ = (call);                                    \
    if (r_ != ncclSuccess) return fail(#call, ncclGetErrorString(r_)); \
  } while (0)

int require_init() { return g.ready ? 0 : fail("simgpu workload", "sim_init was not called"); }

constexpr size_t kOperandBytes = 1 << 20;

int lt_matmul(int m, int n, int k, int batch) {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  int rc = 0;
  const cublasOperation_t transa = CUBLAS_OP_T;  // as torch's addmm path for nn.Linear
  const cublasOperation_t transb = CUBLAS_OP_N;
  const int32_t batch32 = batch;
  const int64_t stride_a = static_cast<int64_t>(m) * k;
  const int64_t stride_b = static_cast<int64_t>(k) * n;
  const int64_t stride_c = static_cast<int64_t>(m) * n;
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const float alpha = 1.0f, beta = 0.0f;
  auto run = [&]() -> int {
    SIM_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    SIM_BLAS(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
    SIM_BLAS(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
    SIM_BLAS(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, k, m, k));  // op(A) = A^T is m x k
    SIM_BLAS(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, k, n, k));
    SIM_BLAS(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, m, n, m));
    if (batch > 1) {
      SIM_BLAS(cublasLtMatrixLayoutSetAttribute(a, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch32,
                                                sizeof(batch32)));
      SIM_BLAS(cublasLtMatrixLayoutSetAttribute(b, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch32,
                                                sizeof(batch32)));
      SIM_BLAS(cublasLtMatrixLayoutSetAttribute(c, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch32,
                                                sizeof(batch32)));
      SIM_BLAS(cublasLtMatrixLayoutSetAttribute(a, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride_a, sizeof(stride_a)));
      SIM_BLAS(cublasLtMatrixLayoutSetAttribute(b, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride_b, sizeof(stride_b)));
      SIM_BLAS(cublasLtMatrixLayoutSetAttribute(c, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride_c, sizeof(stride_c)));
    }
    SIM_BLAS(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t workspace = 0;
    SIM_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &workspace, sizeof(workspace)));
    SIM_BLAS(cublasLtMatmulAlgoGetHeuristic(g.lt, desc, a, b, c, c, pref, 1, &heuristic, &found));
    if (found < 1) return fail("cublasLtMatmulAlgoGetHeuristic", "no algorithm");
    SIM_BLAS(cublasLtMatmul(g.lt, desc, &alpha, g.operands, a, g.operands, b, &beta, g.operands, c,
                            g.operands, c, &heuristic.algo, nullptr, 0, g.compute));
    return 0;
  };
  rc = run();
  if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
  if (c != nullptr) cublasLtMatrixLayoutDestroy(c);
  if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
  if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
  if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  return rc;
}

// Compute -> communication -> compute ordering around one NCCL call.
template <typename Issue>
int on_comm_stream(Issue issue) {
  SIM_CUDA(cudaEventRecord(g.compute_done, g.compute));
  SIM_CUDA(cudaStreamWaitEvent(g.comm_stream, g.compute_done, 0));
  if (int rc = issue(); rc != 0) return rc;
  SIM_CUDA(cudaEventRecord(g.comm_done, g.comm_stream));
  SIM_CUDA(cudaStreamWaitEvent(g.compute, g.comm_done, 0));
  return 0;
}

// One directed transfer, on the communication stream between the compute
// stream's work before and after it, as a pipeline stage sends activations.
int point_to_point(bool send, int peer, long bytes) {
  const char* what = send ? "sim_send" : "sim_recv";
  if (int rc = require_init(); rc != 0) return rc;
  if (bytes < 0) return fail(what, "negative size");
  if (peer < 0 || peer >= g.world) return fail(what, "peer out of range");
  const size_t count = static_cast<size_t>(bytes);
  return on_comm_stream([&]() -> int {
    if (send) {
      SIM_NCCL(ncclSend(g.operands, count, ncclInt8, peer, g.comm, g.comm_stream));
    } else {
      SIM_NCCL(ncclRecv(g.operands, count, ncclInt8, peer, g.comm, g.comm_stream));
    }
    return 0;
  });
}

}  // namespace

extern "C" {

void sim_make_unique_id(const char* job_id, unsigned char* out) {
  memset(out, 0, NCCL_UNIQUE_ID_BYTES);
  snprintf(reinterpret_cast<char*>(out), NCCL_UNIQUE_ID_BYTES, "xpu-timer-sim-job:%s",
           job_id != nullptr ? job_id : "");
}

const char* sim_last_error(void) { return t_error; }

int sim_gemm_api_from_name(const char* name) {
  static const char* const kNames[SIM_GEMM_API_COUNT] = {
      "gemmex",  "stridedbatchedex", "sgemm", "hgemm", "sgemmstridedbatched", "hgemmstridedbatched",
      "ltmatmul"};
  for (int i = 0; name != nullptr && i < SIM_GEMM_API_COUNT; ++i) {
    if (strcmp(name, kNames[i]) == 0) return i;
  }
  return -1;
}

int sim_collective_from_name(const char* name) {
  static const char* const kNames[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                       "reduce"};
  for (int i = 0; name != nullptr && i < 5; ++i) {
    if (strcmp(name, kNames[i]) == 0) return i;
  }
  return -1;
}

int sim_set_comm_name(const char* name) {
  if (g.ready) return fail("sim_set_comm_name", "call it before sim_init");
  g.comm_name = name != nullptr ? name : "";
  return 0;
}

int sim_init(int rank, int world, int local_rank) {
  if (g.ready) return fail("sim_init", "already initialised");
  if (world < 1 || rank < 0 || rank >= world) return fail("sim_init", "invalid rank/world");
  g.rank = rank;
  g.world = world;
  SIM_CUDA(cudaSetDevice(local_rank));
  SIM_CUDA(cudaStreamCreateWithFlags(&g.compute, cudaStreamNonBlocking));
  SIM_CUDA(cudaStreamCreateWithPriority(&g.comm_stream, cudaStreamNonBlocking, -1));
  SIM_CUDA(cudaEventCreateWithFlags(&g.compute_done, cudaEventDisableTiming));
  SIM_CUDA(cudaEventCreateWithFlags(&g.comm_done, cudaEventDisableTiming));
  SIM_CUDA(cudaMalloc(&g.operands, kOperandBytes));
  SIM_BLAS(cublasCreate(&g.blas));
  SIM_BLAS(cublasSetStream(g.blas, g.compute));
  SIM_BLAS(cublasSetMathMode(g.blas, CUBLAS_DEFAULT_MATH));
  SIM_BLAS(cublasLtCreate(&g.lt));
  ncclUniqueId id;
  const char* job = getenv("XPU_TIMER_SIM_JOB_ID");
  sim_make_unique_id(job != nullptr ? job : "nojob", reinterpret_cast<unsigned char*>(id.internal));
  if (g.comm_name.empty()) {
    SIM_NCCL(ncclCommInitRank(&g.comm, world, id, rank));
  } else {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.commName = g.comm_name.c_str();
    SIM_NCCL(ncclCommInitRankConfig(&g.comm, world, id, rank, &config));
  }
  g.ready = true;
  return 0;
}

int sim_gemm(int m, int n, int k, int batch, int api) {
  if (int rc = require_init(); rc != 0) return rc;
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return fail("sim_gemm", "invalid shape");
  const float alpha = 1.0f, beta = 0.0f;
  const __half* halpha = reinterpret_cast<const __half*>(&alpha);  // values are never read
  const auto* f = static_cast<const float*>(g.operands);
  auto* fo = static_cast<float*>(g.operands);
  const auto* h = static_cast<const __half*>(g.operands);
  auto* ho = static_cast<__half*>(g.operands);
  const long long sa = static_cast<long long>(m) * k;
  const long long sb = static_cast<long long>(k) * n;
  const long long sc = static_cast<long long>(m) * n;
  switch (api) {
    case SIM_GEMM_EX:
      SIM_BLAS(cublasGemmEx(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, g.operands,
                            CUDA_R_16BF, m, g.operands, CUDA_R_16BF, k, &beta, g.operands,
                            CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      return 0;
    case SIM_GEMM_STRIDED_BATCHED_EX:
      SIM_BLAS(cublasGemmStridedBatchedEx(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
                                          g.operands, CUDA_R_16BF, m, sa, g.operands, CUDA_R_16BF,
                                          k, sb, &beta, g.operands, CUDA_R_16BF, m, sc, batch,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      return 0;
    case SIM_SGEMM:
      SIM_BLAS(
          cublasSgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, f, m, f, k, &beta, fo, m));
      return 0;
    case SIM_HGEMM:
      SIM_BLAS(cublasHgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, halpha, h, m, h, k, halpha,
                           ho, m));
      return 0;
    case SIM_SGEMM_STRIDED_BATCHED:
      SIM_BLAS(cublasSgemmStridedBatched(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, f, m,
                                         sa, f, k, sb, &beta, fo, m, sc, batch));
      return 0;
    case SIM_HGEMM_STRIDED_BATCHED:
      SIM_BLAS(cublasHgemmStridedBatched(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, halpha, h, m,
                                         sa, h, k, sb, halpha, ho, m, sc, batch));
      return 0;
    case SIM_LT_MATMUL:
      return lt_matmul(m, n, k, batch);
    default:
      return fail("sim_gemm", "unknown GEMM api");
  }
}

int sim_collective_ex(int kind, long bytes, int dtype, int root) {
  if (int rc = require_init(); rc != 0) return rc;
  if (bytes < 0) return fail("sim_collective", "negative size");
  if (dtype != SIM_BF16 && dtype != SIM_F32) return fail("sim_collective", "unknown dtype");
  if (root < 0 || root >= g.world) return fail("sim_collective", "root out of range");
  const size_t elems = static_cast<size_t>(bytes) / 2;  // as many elements as bf16 would have
  const size_t per_rank = elems / static_cast<size_t>(g.world);
  const ncclDataType_t type = dtype == SIM_F32 ? ncclFloat32 : ncclBfloat16;
  void* buf = g.operands;  // never read or written by the sim
  return on_comm_stream([&]() -> int {
    switch (kind) {
      case SIM_ALLREDUCE:
        SIM_NCCL(ncclAllReduce(buf, buf, elems, type, ncclSum, g.comm, g.comm_stream));
        return 0;
      case SIM_ALLGATHER:
        SIM_NCCL(ncclAllGather(buf, buf, per_rank, type, g.comm, g.comm_stream));
        return 0;
      case SIM_REDUCESCATTER:
        SIM_NCCL(ncclReduceScatter(buf, buf, per_rank, type, ncclSum, g.comm, g.comm_stream));
        return 0;
      case SIM_BROADCAST:
        SIM_NCCL(ncclBroadcast(buf, buf, elems, type, root, g.comm, g.comm_stream));
        return 0;
      case SIM_REDUCE:
        SIM_NCCL(ncclReduce(buf, buf, elems, type, ncclSum, root, g.comm, g.comm_stream));
        return 0;
      default:
        return fail("sim_collective", "unknown collective");
    }
  });
}

int sim_collective(int kind, long bytes) { return sim_collective_ex(kind, bytes, SIM_BF16, 0); }

int sim_sync(void) {
  if (int rc = require_init(); rc != 0) return rc;
  SIM_CUDA(cudaStreamSynchronize(g.compute));
  SIM_CUDA(cudaStreamSynchronize(g.comm_stream));
  return 0;
}

int sim_sync_lagged(int lag) {
  if (int rc = require_init(); rc != 0) return rc;
  if (lag < 0) return fail("sim_sync_lagged", "negative lag");
  // The compute stream waits for each collective (on_comm_stream), so an
  // event on it after the step marks the whole step done.
  cudaEvent_t end = nullptr;
  SIM_CUDA(cudaEventCreateWithFlags(&end, cudaEventDisableTiming));
  SIM_CUDA(cudaEventRecord(end, g.compute));
  g.step_ends.push_back(end);
  while (g.step_ends.size() > static_cast<size_t>(lag)) {
    cudaEvent_t oldest = g.step_ends.front();
    g.step_ends.pop_front();
    const cudaError_t rc = cudaEventSynchronize(oldest);
    cudaEventDestroy(oldest);
    if (rc != cudaSuccess) return fail("sim_sync_lagged", cudaGetErrorString(rc));
  }
  return 0;
}

int sim_memcpy(long bytes, int kind) {
  if (int rc = require_init(); rc != 0) return rc;
  if (bytes < 0 || kind < SIM_H2D || kind > SIM_D2D) return fail("sim_memcpy", "invalid argument");
  const size_t n = static_cast<size_t>(bytes);
  if (n > g.copy_bytes) {
    cudaFreeHost(g.host_buf);
    cudaFree(g.dev_buf);
    g.host_buf = g.dev_buf = nullptr;
    g.copy_bytes = 0;
    SIM_CUDA(cudaMallocHost(&g.host_buf, n));
    SIM_CUDA(cudaMalloc(&g.dev_buf, n));
    g.copy_bytes = n;
  }
  switch (kind) {
    case SIM_H2D:
      SIM_CUDA(cudaMemcpyAsync(g.dev_buf, g.host_buf, n, cudaMemcpyHostToDevice, g.compute));
      break;
    case SIM_D2H:
      SIM_CUDA(cudaMemcpyAsync(g.host_buf, g.dev_buf, n, cudaMemcpyDeviceToHost, g.compute));
      break;
    default:
      SIM_CUDA(cudaMemsetAsync(g.dev_buf, 0, n, g.compute));
      SIM_CUDA(cudaMemcpyAsync(g.dev_buf, g.dev_buf, n, cudaMemcpyDeviceToDevice, g.compute));
      break;
  }
  return 0;
}

int sim_capture_gemm(int m, int n, int k) {
  if (int rc = require_init(); rc != 0) return rc;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  SIM_CUDA(cudaStreamBeginCapture(g.compute, cudaStreamCaptureModeThreadLocal));
  const int rc = sim_gemm(m, n, k, 1, SIM_GEMM_EX);
  const cudaError_t end = cudaStreamEndCapture(g.compute, &graph);
  if (rc != 0) return rc;
  if (end != cudaSuccess) return fail("cudaStreamEndCapture", cudaGetErrorString(end));
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (inst != cudaSuccess) return fail("cudaGraphInstantiate", cudaGetErrorString(inst));
  const cudaError_t launch = cudaGraphLaunch(exec, g.compute);
  cudaGraphExecDestroy(exec);
  if (launch != cudaSuccess) return fail("cudaGraphLaunch", cudaGetErrorString(launch));
  return 0;
}

int sim_group_allreduce(int n, long bytes) {
  if (int rc = require_init(); rc != 0) return rc;
  if (n < 0 || bytes < 0) return fail("sim_group_allreduce", "invalid argument");
  return on_comm_stream([&]() -> int {
    SIM_NCCL(ncclGroupStart());
    for (int i = 0; i < n; ++i) {
      const ncclResult_t r = ncclAllReduce(g.operands, g.operands, static_cast<size_t>(bytes) / 2,
                                           ncclBfloat16, ncclSum, g.comm, g.comm_stream);
      if (r != ncclSuccess) {
        ncclGroupEnd();
        return fail("ncclAllReduce", ncclGetErrorString(r));
      }
    }
    SIM_NCCL(ncclGroupEnd());
    return 0;
  });
}

int sim_sendrecv_ring(long bytes) {
  if (int rc = require_init(); rc != 0) return rc;
  if (bytes < 0) return fail("sim_sendrecv_ring", "invalid argument");
  const int next = (g.rank + 1) % g.world;
  const int prev = (g.rank + g.world - 1) % g.world;
  const size_t count = static_cast<size_t>(bytes);
  return on_comm_stream([&]() -> int {
    SIM_NCCL(ncclGroupStart());
    // Receive listed first on purpose: the group must not deadlock on order.
    const ncclResult_t r1 = ncclRecv(g.operands, count, ncclInt8, prev, g.comm, g.comm_stream);
    const ncclResult_t r2 = ncclSend(g.operands, count, ncclInt8, next, g.comm, g.comm_stream);
    SIM_NCCL(ncclGroupEnd());
    SIM_NCCL(r1);
    SIM_NCCL(r2);
    return 0;
  });
}

int sim_send(int peer, long bytes) { return point_to_point(true, peer, bytes); }

int sim_recv(int peer, long bytes) { return point_to_point(false, peer, bytes); }

int sim_split_allreduce(int ngroups, long bytes) {
  if (int rc = require_init(); rc != 0) return rc;
  if (ngroups < 1 || bytes < 0) return fail("sim_split_allreduce", "invalid argument");
  if (g.split_comm == nullptr || g.split_groups != ngroups) {
    if (g.split_comm != nullptr) ncclCommDestroy(g.split_comm);
    g.split_comm = nullptr;
    if (g.comm_name.empty()) {
      SIM_NCCL(ncclCommSplit(g.comm, g.rank % ngroups, g.rank, &g.split_comm, nullptr));
    } else {
      g.split_name = g.comm_name + "_split";
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.commName = g.split_name.c_str();
      SIM_NCCL(ncclCommSplit(g.comm, g.rank % ngroups, g.rank, &g.split_comm, &config));
    }
    g.split_groups = ngroups;
  }
  return on_comm_stream([&]() -> int {
    SIM_NCCL(ncclAllReduce(g.operands, g.operands, static_cast<size_t>(bytes) / 2, ncclBfloat16,
                           ncclSum, g.split_comm, g.comm_stream));
    return 0;
  });
}

int sim_subgroup_allreduce(const char* name, int color, long bytes) {
  if (int rc = require_init(); rc != 0) return rc;
  if (name == nullptr || name[0] == '\0' || color < 0 || bytes < 0) {
    return fail("sim_subgroup_allreduce", "invalid argument");
  }
  Workload::Subgroup* sub = nullptr;
  for (Workload::Subgroup& s : g.subgroups) {
    if (s.name == name) sub = &s;
  }
  if (sub != nullptr && sub->color != color) {
    return fail("sim_subgroup_allreduce", "a group's color changed");
  }
  if (sub == nullptr) {
    g.subgroups.push_back(Workload::Subgroup{name, color, nullptr});
    sub = &g.subgroups.back();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.commName = sub->name.c_str();
    SIM_NCCL(ncclCommSplit(g.comm, color, g.rank, &sub->comm, &config));
  }
  ncclComm_t comm = sub->comm;
  return on_comm_stream([&]() -> int {
    SIM_NCCL(ncclAllReduce(g.operands, g.operands, static_cast<size_t>(bytes) / 2, ncclBfloat16,
                           ncclSum, comm, g.comm_stream));
    return 0;
  });
}

int sim_finalize(void) {
  if (int rc = require_init(); rc != 0) return rc;
  if (int rc = sim_sync(); rc != 0) return rc;
  for (cudaEvent_t e : g.step_ends) cudaEventDestroy(e);
  if (g.split_comm != nullptr) ncclCommDestroy(g.split_comm);
  for (Workload::Subgroup& s : g.subgroups) ncclCommDestroy(s.comm);
  g.subgroups.clear();
  ncclCommDestroy(g.comm);
  cublasLtDestroy(g.lt);
  cublasDestroy(g.blas);
  cudaEventDestroy(g.compute_done);
  cudaEventDestroy(g.comm_done);
  cudaStreamDestroy(g.compute);
  cudaStreamDestroy(g.comm_stream);
  cudaFree(g.operands);
  cudaFree(g.dev_buf);
  cudaFreeHost(g.host_buf);
  g = Workload();
  return 0;
}

void sim_crash_segv(void) {
  // A real invalid write (not raise()), so crash handlers see a genuine fault
  // with this function as the faulting frame. The store is volatile: a plain
  // store through a pointer the compiler can see is null is dropped as UB
  // (GCC 12 turned this function into a tail call of raise()).
  volatile int* volatile target = nullptr;
  *target = 42;
  raise(SIGSEGV);                     // not reached
  __asm__ volatile("" ::: "memory");  // no tail call: keep this frame on the stack
}

void sim_crash_abort(void) { abort(); }

void sim_crash_abort_in_thread(void) {
  // Like a NCCL watchdog that gives up: a C++ exception escapes a thread that
  // runs no Python, std::terminate aborts the process. The caller waits.
  std::thread watchdog([] {
    pthread_setname_np(pthread_self(), "sim-watchdog");
    throw std::runtime_error("simulated watchdog timeout");
  });
  watchdog.join();
}

}  // extern "C"

// ---- runtime calls without sim_init (the compute stream, or the legacy
// default stream before sim_init) ----

namespace {
cudaStream_t user_stream() { return g.ready ? g.compute : nullptr; }
// A kernel of the user's: the sim ignores the function, it only needs one.
void user_kernel() {}
}  // namespace

int sim_device_malloc(long bytes, int async) {
  if (bytes <= 0) return fail("sim_device_malloc", "invalid argument");
  void* p = nullptr;
  if (async != 0) {
    SIM_CUDA(cudaMallocAsync(&p, static_cast<size_t>(bytes), user_stream()));
  } else {
    SIM_CUDA(cudaMalloc(&p, static_cast<size_t>(bytes)));
  }
  g.user_buffers.push_back(p);
  return 0;
}

int sim_device_free(int async) {
  if (g.user_buffers.empty()) return fail("sim_device_free", "no buffer left");
  void* p = g.user_buffers.back();
  g.user_buffers.pop_back();
  if (async != 0) {
    SIM_CUDA(cudaFreeAsync(p, user_stream()));
  } else {
    SIM_CUDA(cudaFree(p));
  }
  return 0;
}

// What nvcc 13's launch code calls (crt/device_functions.h declares it for nvcc only).
extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);

int sim_launch_kernels(long n, int api) {
  if (n < 0 || api < SIM_LAUNCH_KERNEL || api > SIM_LAUNCH_KERNEL_EXC) {
    return fail("sim_launch_kernels", "invalid argument");
  }
  void* no_args[1] = {nullptr};
  const void* fn = reinterpret_cast<const void*>(&user_kernel);
  for (long i = 0; i < n; ++i) {
    switch (api) {
      case SIM_LAUNCH_KERNEL:
        SIM_CUDA(cudaLaunchKernel(fn, dim3(1), dim3(32), no_args, 0, user_stream()));
        break;
      case SIM_LAUNCH_NVCC:
        SIM_CUDA(__cudaLaunchKernel(reinterpret_cast<cudaKernel_t>(const_cast<void*>(fn)), dim3(1),
                                    dim3(32), no_args, 0, user_stream()));
        break;
      default: {
        cudaLaunchConfig_t config{};
        config.gridDim = dim3(1);
        config.blockDim = dim3(32);
        config.stream = user_stream();
        SIM_CUDA(cudaLaunchKernelExC(&config, fn, no_args));
        break;
      }
    }
  }
  return 0;
}

int sim_copy(int kind, long bytes, int sync) {
  if (bytes < 0) return fail("sim_copy", "invalid argument");
  const size_t n = static_cast<size_t>(bytes);
  if (g.user_buffers.empty()) return fail("sim_copy", "sim_device_malloc a buffer first");
  void* dev = g.user_buffers.back();
  if (g.user_host.size() < n) g.user_host.resize(n);
  void* host = g.user_host.data();
  cudaStream_t s = user_stream();
  auto copy = [&](void* dst, const void* src, cudaMemcpyKind k) -> cudaError_t {
    return sync != 0 ? cudaMemcpy(dst, src, n, k) : cudaMemcpyAsync(dst, src, n, k, s);
  };
  switch (kind) {
    case SIM_COPY_H2D:
      SIM_CUDA(copy(dev, host, cudaMemcpyHostToDevice));
      break;
    case SIM_COPY_D2H:
      SIM_CUDA(copy(host, dev, cudaMemcpyDeviceToHost));
      break;
    case SIM_COPY_D2D:
      SIM_CUDA(copy(dev, dev, cudaMemcpyDeviceToDevice));
      break;
    case SIM_COPY_H2H:
      SIM_CUDA(copy(host, host, cudaMemcpyHostToHost));
      break;
    case SIM_COPY_DEFAULT_H2D:
      SIM_CUDA(copy(dev, host, cudaMemcpyDefault));
      break;
    case SIM_COPY_DEFAULT_D2H:
      SIM_CUDA(copy(host, dev, cudaMemcpyDefault));
      break;
    case SIM_COPY_PEER:
      if (sync != 0) {
        SIM_CUDA(cudaMemcpyPeer(dev, 0, dev, 0, n));
      } else {
        SIM_CUDA(cudaMemcpyPeerAsync(dev, 0, dev, 0, n, s));
      }
      break;
    default:
      return fail("sim_copy", "unknown kind");
  }
  return 0;
}

int sim_copy_kind_from_name(const char* name) {
  static const char* const names[] = {"h2d",         "d2h",         "d2d", "h2h",
                                      "default-h2d", "default-d2h", "peer"};
  for (int i = 0; i < static_cast<int>(sizeof(names) / sizeof(names[0])); ++i) {
    if (name != nullptr && strcmp(name, names[i]) == 0) return i;
  }
  return -1;
}

int sim_device_sync(void) {
  SIM_CUDA(cudaDeviceSynchronize());
  return 0;
}

int sim_hold_gpu(double ms) {
  if (int rc = require_init(); rc != 0) return rc;
  if (!(ms >= 0 && ms <= 3.6e6)) return fail("sim_hold_gpu", "invalid duration");
  SIM_CUDA(xpu_sim_launch_kernel(g.compute, static_cast<uint64_t>(ms * 1e6)));
  return 0;
}
