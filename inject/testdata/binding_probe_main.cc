// inject_binding_probe: linked against the REAL libcudart, libcublas,
// libcublasLt and libnccl of the CUDA toolkit, so it imports every hooked name
// exactly as PyTorch does (cudaLaunchKernel@libcudart.so.13,
// cublasGemmEx@libcublas.so.13, cublasLtMatmul@libcublasLt.so.13, unversioned
// NCCL). The binding test runs it with LD_PRELOAD and
// LD_DEBUG=bindings and checks that every reference binds to the hooks.
// With "call" it also calls a few entry points with null handles (no GPU is
// needed for the library to refuse them) and prints the statuses, which must
// be identical with and without the hooks.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>
#include <cstring>

// nvcc 13's launch code calls this (crt/device_functions.h declares it for nvcc only).
extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);

namespace {

// Address-taken references: relocated at load time, so LD_DEBUG=bindings
// shows each one even when nothing is called.
void* volatile g_refs[] = {
    reinterpret_cast<void*>(
        static_cast<cublasStatus_t (*)(
            cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t)>(&cublasGemmEx)),
    reinterpret_cast<void*>(
        static_cast<cublasStatus_t (*)(
            cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
            const void*, cudaDataType, int, long long, const void*, cudaDataType, int, long long,
            const void*, void*, cudaDataType, int, long long, int, cublasComputeType_t,
            cublasGemmAlgo_t)>(&cublasGemmStridedBatchedEx)),
    reinterpret_cast<void*>(&cublasSgemm_v2),
    reinterpret_cast<void*>(&cublasHgemm),
    reinterpret_cast<void*>(&cublasSgemmStridedBatched),
    reinterpret_cast<void*>(&cublasHgemmStridedBatched),
    reinterpret_cast<void*>(&cublasLtMatmul),
    reinterpret_cast<void*>(&ncclAllReduce),
    reinterpret_cast<void*>(&ncclAllGather),
    reinterpret_cast<void*>(&ncclReduceScatter),
    reinterpret_cast<void*>(&ncclBroadcast),
    reinterpret_cast<void*>(&ncclReduce),
    reinterpret_cast<void*>(&ncclSend),
    reinterpret_cast<void*>(&ncclRecv),
    reinterpret_cast<void*>(&ncclGroupStart),
    reinterpret_cast<void*>(&ncclGroupEnd),
    reinterpret_cast<void*>(&ncclCommInitRank),
    reinterpret_cast<void*>(&ncclCommInitRankConfig),
    reinterpret_cast<void*>(&ncclCommInitRankScalable),
    reinterpret_cast<void*>(&ncclCommSplit),
    reinterpret_cast<void*>(&ncclCommDestroy),
    reinterpret_cast<void*>(&ncclCommAbort),
    reinterpret_cast<void*>(
        static_cast<cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t)>(
            &cudaLaunchKernel)),
    reinterpret_cast<void*>(&__cudaLaunchKernel),
    reinterpret_cast<void*>(
        static_cast<cudaError_t (*)(const cudaLaunchConfig_t*, const void*, void**)>(
            &cudaLaunchKernelExC)),
    reinterpret_cast<void*>(
        static_cast<cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t)>(
            &cudaLaunchCooperativeKernel)),
    reinterpret_cast<void*>(static_cast<cudaError_t (*)(void**, size_t)>(&cudaMalloc)),
    reinterpret_cast<void*>(
        static_cast<cudaError_t (*)(void**, size_t, cudaStream_t)>(&cudaMallocAsync)),
    reinterpret_cast<void*>(
        static_cast<cudaError_t (*)(void**, size_t, cudaMemPool_t, cudaStream_t)>(
            &cudaMallocFromPoolAsync)),
    reinterpret_cast<void*>(&cudaFree),
    reinterpret_cast<void*>(&cudaFreeAsync),
    reinterpret_cast<void*>(&cudaMemcpy),
    reinterpret_cast<void*>(&cudaMemcpyAsync),
    reinterpret_cast<void*>(&cudaMemcpyPeer),
    reinterpret_cast<void*>(&cudaMemcpyPeerAsync),
    reinterpret_cast<void*>(&cudaStreamSynchronize),
    reinterpret_cast<void*>(&cudaEventSynchronize),
    reinterpret_cast<void*>(&cudaDeviceSynchronize),
};

}  // namespace

int main(int argc, char** argv) {
  std::printf("refs %zu\n", sizeof(g_refs) / sizeof(g_refs[0]));
  if (argc > 1 && std::strcmp(argv[1], "call") == 0) {
    float alpha = 1, beta = 0;
    std::printf(
        "cublasGemmEx %d\n",
        static_cast<int>(cublasGemmEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, nullptr,
                                      CUDA_R_32F, 2, nullptr, CUDA_R_32F, 2, &beta, nullptr,
                                      CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)));
    std::printf("cublasSgemm_v2 %d\n",
                static_cast<int>(cublasSgemm_v2(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha,
                                                nullptr, 2, nullptr, 2, &beta, nullptr, 2)));
    std::printf("cublasLtMatmul %d\n",
                static_cast<int>(cublasLtMatmul(nullptr, nullptr, &alpha, nullptr, nullptr, nullptr,
                                                nullptr, &beta, nullptr, nullptr, nullptr, nullptr,
                                                nullptr, nullptr, 0, nullptr)));
    std::printf("ncclCommDestroy %d\n", static_cast<int>(ncclCommDestroy(nullptr)));
    // Without a GPU the runtime refuses these (no device / no driver).
    void* p = nullptr;
    std::printf("cudaMalloc %d\n", static_cast<int>(cudaMalloc(&p, size_t{256})));
    char host[8] = {};
    std::printf("cudaMemcpy %d\n",
                static_cast<int>(cudaMemcpy(host, host + 4, 4, cudaMemcpyDefault)));
    std::printf("cudaLaunchKernel %d\n",
                static_cast<int>(cudaLaunchKernel(reinterpret_cast<const void*>(&main), dim3(1),
                                                  dim3(1), nullptr, 0, nullptr)));
  }
  return 0;
}
