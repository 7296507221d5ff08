// The CUDA runtime, cuBLAS and cuBLASLt functions the replay calls, resolved
// at run time with dlopen as the product always does (the build uses the
// CUDA headers only, so one binary serves CUDA 12 and 13 machines, and CI
// runs it on the simulated libraries of tests/simgpu). Only functions whose
// signature is the same in CUDA 12 and 13 are used. Threads: one (the CLI's).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "common/cublas_gemm_types.h"

namespace xpu_timer::replay {

struct CudaApi {
  decltype(&::cudaSetDevice) set_device = nullptr;
  decltype(&::cudaMalloc) malloc = nullptr;
  decltype(&::cudaFree) free = nullptr;
  decltype(&::cudaMemcpy) memcpy = nullptr;
  decltype(&::cudaStreamCreateWithFlags) stream_create = nullptr;
  decltype(&::cudaStreamDestroy) stream_destroy = nullptr;
  decltype(&::cudaStreamSynchronize) stream_sync = nullptr;
  decltype(&::cudaEventCreate) event_create = nullptr;
  decltype(&::cudaEventDestroy) event_destroy = nullptr;
  decltype(&::cudaEventRecord) event_record = nullptr;
  decltype(&::cudaEventSynchronize) event_sync = nullptr;
  decltype(&::cudaEventElapsedTime) elapsed = nullptr;
  decltype(&::cudaGetErrorString) error_string = nullptr;

  decltype(&::cublasCreate_v2) blas_create = nullptr;
  decltype(&::cublasDestroy_v2) blas_destroy = nullptr;
  decltype(&::cublasSetStream_v2) blas_set_stream = nullptr;
  GemmExFn gemm_ex = nullptr;
  GemmStridedBatchedExFn gemm_sb_ex = nullptr;
  decltype(&::cublasSgemm_v2) sgemm = nullptr;
  decltype(&::cublasHgemm) hgemm = nullptr;
  decltype(&::cublasSgemmStridedBatched) sgemm_sb = nullptr;
  decltype(&::cublasHgemmStridedBatched) hgemm_sb = nullptr;

  decltype(&::cublasLtCreate) lt_create = nullptr;
  decltype(&::cublasLtDestroy) lt_destroy = nullptr;
  decltype(&::cublasLtMatmul) lt_matmul = nullptr;
  decltype(&::cublasLtMatmulDescCreate) lt_desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) lt_desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) lt_desc_set = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) lt_layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) lt_layout_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) lt_layout_set = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) lt_pref_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) lt_pref_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) lt_pref_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) lt_heuristic = nullptr;

  // The libraries found (for the report), e.g. "libcublas.so.13".
  std::string cudart_path, cublas_path, cublaslt_path;
};

// Opens libcudart, libcublas and libcublasLt (SONAME 13, then 12, then the
// unversioned name; from `lib_dir` first when it is not empty, else the
// loader's search path) and resolves every function above. False with one
// line naming what is missing. The libraries stay loaded for the process.
bool load_cuda_api(const std::string& lib_dir, CudaApi* api, std::string* error);

// The GPU's name from the driver (libcuda's cuDeviceGetName), or "" when
// the driver cannot say (the simulated GPU has no libcuda).
std::string device_name(int device);

}  // namespace xpu_timer::replay
