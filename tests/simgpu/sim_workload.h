/* C API of libsim_workload.so: the "user's program" side of the simulated
 * GPU, loaded by the trainers with dlopen(RTLD_LOCAL) / ctypes exactly as
 * Python loads torch. Not thread-safe: one host thread drives it, as one
 * training loop does. Functions returning int return 0 on success and a
 * negative value on failure; sim_last_error() then says what failed. */
#ifndef XPU_TIMER_TESTS_SIMGPU_SIM_WORKLOAD_H_
#define XPU_TIMER_TESTS_SIMGPU_SIM_WORKLOAD_H_

#ifdef __cplusplus
extern "C" {
#endif

/* GEMM entry point exercised by sim_gemm (each one is a different hook). */
enum SimGemmApi {
  SIM_GEMM_EX = 0,                 /* cublasGemmEx, bf16 */
  SIM_GEMM_STRIDED_BATCHED_EX = 1, /* cublasGemmStridedBatchedEx, bf16 */
  SIM_SGEMM = 2,                   /* cublasSgemm_v2 */
  SIM_HGEMM = 3,                   /* cublasHgemm */
  SIM_SGEMM_STRIDED_BATCHED = 4,   /* cublasSgemmStridedBatched */
  SIM_HGEMM_STRIDED_BATCHED = 5,   /* cublasHgemmStridedBatched */
  SIM_LT_MATMUL = 6,               /* cublasLtMatmul, bf16 */
  SIM_GEMM_API_COUNT = 7
};

/* Collective issued by sim_collective; `bytes` is the full tensor: the
 * all-reduced / broadcast / reduced buffer, the gathered output of
 * AllGather, the input of ReduceScatter (bf16 elements). */
enum SimCollective {
  SIM_ALLREDUCE = 0,
  SIM_ALLGATHER = 1,
  SIM_REDUCESCATTER = 2,
  SIM_BROADCAST = 3,
  SIM_REDUCE = 4
};

/* Element type of sim_collective_ex. */
enum SimDType { SIM_BF16 = 0, SIM_F32 = 1 };

/* Memcpy direction of sim_memcpy. */
enum SimMemcpyKind { SIM_H2D = 0, SIM_D2H = 1, SIM_D2D = 2 };

/* cudaSetDevice(local_rank), a compute and a communication stream, cuBLAS and
 * cuBLASLt handles, and an NCCL communicator of `world` ranks whose
 * ncclUniqueId is derived from XPU_TIMER_SIM_JOB_ID (sim_make_unique_id).
 * Blocks until every rank called it (like ncclCommInitRank). */
int sim_init(int rank, int world, int local_rank);
/* Before sim_init: create the communicator with ncclCommInitRankConfig and
 * this commName (NULL or "": ncclCommInitRank, no name); the communicator of
 * sim_split_allreduce is then named `name`_split. */
int sim_set_comm_name(const char* name);
/* One GEMM (batch ignored by the non-batched APIs) on the compute stream. */
int sim_gemm(int m, int n, int k, int batch, int api);
/* One collective on the communication stream, ordered after the compute
 * stream's work and before its later work (as PyTorch's ProcessGroupNCCL). */
int sim_collective(int kind, long bytes);
/* The same with another element type (the element count stays bytes / 2,
 * so SIM_F32 moves twice the bytes) and the root of Broadcast / Reduce. */
int sim_collective_ex(int kind, long bytes, int dtype, int root);
/* Waits until both streams are idle. */
int sim_sync(void);
/* Marks the end of a step and waits until the step `lag` steps before this
 * one is done (lag 0: this one), so the host stays up to `lag` steps ahead of
 * the GPU, whose streams then never run dry while the host is descheduled. */
int sim_sync_lagged(int lag);
/* cudaMemcpyAsync of `bytes` on the compute stream (kind: SimMemcpyKind). */
int sim_memcpy(long bytes, int kind);
/* Captures one GemmEx on the compute stream into a CUDA graph (the hook
 * sees cublasGemmEx while cudaStreamIsCapturing says active), then launches
 * the graph once. */
int sim_capture_gemm(int m, int n, int k);
/* n AllReduces of `bytes` between ncclGroupStart and ncclGroupEnd. */
int sim_group_allreduce(int n, long bytes);
/* Each rank sends `bytes` to rank+1 and receives from rank-1 in one group. */
int sim_sendrecv_ring(long bytes);
/* One ncclSend / ncclRecv of `bytes` to / from `peer` on the communication
 * stream, ordered like sim_collective (a pipeline stage's activations and
 * gradients). Sends are eager; the receive's stream work completes once the
 * matching send (the peer's next one to this rank) has started, plus its
 * transfer time. */
int sim_send(int peer, long bytes);
int sim_recv(int peer, long bytes);
/* AllReduce on a sub-communicator of the ranks with equal rank % ngroups
 * (ncclCommSplit on first use). */
int sim_split_allreduce(int ngroups, long bytes);
/* AllReduce on the sub-communicator named `name` (commName): the ranks that
 * pass the same `color`, split from the world communicator (ncclCommSplit,
 * key = rank) at its first use. A rank's color for a name never changes.
 * Tensor, pipeline and data parallel groups as Megatron builds them. */
int sim_subgroup_allreduce(const char* name, int color, long bytes);
/* Destroys the communicator, handles and streams (after sim_sync). */
int sim_finalize(void);
/* Crashes the process from native code: a real invalid write, or abort(). */
void sim_crash_segv(void);
void sim_crash_abort(void);
/* std::terminate in a native thread named "sim-watchdog" (an uncaught C++
   exception); the calling thread waits for it. */
void sim_crash_abort_in_thread(void);
/* The user's own CUDA runtime calls, usable without sim_init (on the legacy
 * default stream then, else on the compute stream): what xpu-timer counts
 * without timing (kernel launches, device allocations) and the copies it
 * times by direction. */
enum SimCopyKind {
  SIM_COPY_H2D = 0,         /* cudaMemcpy(Async) HostToDevice */
  SIM_COPY_D2H = 1,         /* DeviceToHost */
  SIM_COPY_D2D = 2,         /* DeviceToDevice */
  SIM_COPY_H2H = 3,         /* HostToHost */
  SIM_COPY_DEFAULT_H2D = 4, /* cudaMemcpyDefault, host source, device destination */
  SIM_COPY_DEFAULT_D2H = 5, /* cudaMemcpyDefault, device source, host destination */
  SIM_COPY_PEER = 6         /* cudaMemcpyPeer(Async) */
};
/* cudaMalloc (async: cudaMallocAsync) of `bytes`, kept on a stack. */
int sim_device_malloc(long bytes, int async);
/* cudaFree (async: cudaFreeAsync) of the last buffer of sim_device_malloc. */
int sim_device_free(int async);
/* Kernel launch entry point of sim_launch_kernels. */
enum SimLaunchApi {
  SIM_LAUNCH_KERNEL = 0,    /* cudaLaunchKernel */
  SIM_LAUNCH_NVCC = 1,      /* __cudaLaunchKernel: what nvcc 13 emits for kernel<<<...>>> */
  SIM_LAUNCH_KERNEL_EXC = 2 /* cudaLaunchKernelExC */
};
/* n launches of a user kernel (XPU_TIMER_SIM_KERNEL_US each) through `api`. */
int sim_launch_kernels(long n, int api);
/* One copy of `bytes` between a host buffer and the last sim_device_malloc
 * buffer (at least `bytes` long); sync: cudaMemcpy(Peer), else the Async call. */
int sim_copy(int kind, long bytes, int sync);
/* "h2d" "d2h" "d2d" "h2h" "default-h2d" "default-d2h" "peer"; -1 otherwise. */
int sim_copy_kind_from_name(const char* name);
/* cudaDeviceSynchronize. */
int sim_device_sync(void);
/* Queues `ms` of GPU work on the compute stream that no CUDA call shows (the
 * simulated GPU's own kernel): the GEMMs queued behind it run back to back, as
 * on a GPU the host keeps ahead of, whatever the host's scheduling delays. */
int sim_hold_gpu(double ms);

/* NVTX ranges, through the NVTX v3 headers (tests/simgpu/workload_nvtx.cc):
 * nvtxRangePushA / nvtxRangePop / nvtxRangeStartA / nvtxRangeEnd, and a
 * push+pop of a registered string in a named domain (as NCCL's own ranges). */
int sim_nvtx_push(const char* name);
int sim_nvtx_pop(void);
unsigned long long sim_nvtx_start(const char* name);
void sim_nvtx_end(unsigned long long id);
int sim_nvtx_domain_push(const char* domain, const char* name);

/* Name <-> enum helpers for the trainers' flags; -1 for unknown names.
 * GEMM names: gemmex stridedbatchedex sgemm hgemm sgemmstridedbatched
 * hgemmstridedbatched ltmatmul. Collectives: allreduce allgather
 * reducescatter broadcast reduce. */
int sim_gemm_api_from_name(const char* name);
int sim_collective_from_name(const char* name);
/* The deterministic ncclUniqueId of a job (the sim's stand-in for the
 * TCPStore exchange): 128 bytes written to `out`. */
void sim_make_unique_id(const char* job_id, unsigned char* out);
/* Message of the last failure of this library (never NULL). */
const char* sim_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* XPU_TIMER_TESTS_SIMGPU_SIM_WORKLOAD_H_ */
