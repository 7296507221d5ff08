#include "replay/cuda_api.h"

#include <dlfcn.h>

namespace xpu_timer::replay {
namespace {

// RTLD_LOCAL: nothing of ours needs the symbols in the global scope, and the
// three libraries find each other through their own DT_NEEDED entries.
void* open_lib(const std::string& dir, const char* base, std::string* found) {
  for (const char* suffix : {".so.13", ".so.12", ".so"}) {
    const std::string name = std::string(base) + suffix;
    for (const std::string& path : {dir.empty() ? std::string() : dir + "/" + name, name}) {
      if (path.empty()) continue;
      if (void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        *found = path;
        return h;
      }
    }
  }
  return nullptr;
}

template <typename Fn>
bool bind(void* lib, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (*out == nullptr && missing->empty()) *missing = name;
  return *out != nullptr;
}

}  // namespace

bool load_cuda_api(const std::string& lib_dir, CudaApi* a, std::string* error) {
  void* rt = open_lib(lib_dir, "libcudart", &a->cudart_path);
  void* blas = open_lib(lib_dir, "libcublas", &a->cublas_path);
  void* lt = open_lib(lib_dir, "libcublasLt", &a->cublaslt_path);
  if (rt == nullptr || blas == nullptr || lt == nullptr) {
    *error = std::string("cannot load ") +
             (rt == nullptr     ? "libcudart"
              : blas == nullptr ? "libcublas"
                                : "libcublasLt") +
             " (.so.13, .so.12 or .so" + (lib_dir.empty() ? "" : " in " + lib_dir + " or") +
             " on the loader's path): " + ::dlerror();
    return false;
  }
  std::string missing;
  bind(rt, "cudaSetDevice", &a->set_device, &missing);
  bind(rt, "cudaMalloc", &a->malloc, &missing);
  bind(rt, "cudaFree", &a->free, &missing);
  bind(rt, "cudaMemcpy", &a->memcpy, &missing);
  bind(rt, "cudaStreamCreateWithFlags", &a->stream_create, &missing);
  bind(rt, "cudaStreamDestroy", &a->stream_destroy, &missing);
  bind(rt, "cudaStreamSynchronize", &a->stream_sync, &missing);
  bind(rt, "cudaEventCreate", &a->event_create, &missing);
  bind(rt, "cudaEventDestroy", &a->event_destroy, &missing);
  bind(rt, "cudaEventRecord", &a->event_record, &missing);
  bind(rt, "cudaEventSynchronize", &a->event_sync, &missing);
  bind(rt, "cudaEventElapsedTime", &a->elapsed, &missing);
  bind(rt, "cudaGetErrorString", &a->error_string, &missing);
  bind(blas, "cublasCreate_v2", &a->blas_create, &missing);
  bind(blas, "cublasDestroy_v2", &a->blas_destroy, &missing);
  bind(blas, "cublasSetStream_v2", &a->blas_set_stream, &missing);
  bind(blas, "cublasGemmEx", &a->gemm_ex, &missing);
  bind(blas, "cublasGemmStridedBatchedEx", &a->gemm_sb_ex, &missing);
  bind(blas, "cublasSgemm_v2", &a->sgemm, &missing);
  bind(blas, "cublasHgemm", &a->hgemm, &missing);
  bind(blas, "cublasSgemmStridedBatched", &a->sgemm_sb, &missing);
  bind(blas, "cublasHgemmStridedBatched", &a->hgemm_sb, &missing);
  bind(lt, "cublasLtCreate", &a->lt_create, &missing);
  bind(lt, "cublasLtDestroy", &a->lt_destroy, &missing);
  bind(lt, "cublasLtMatmul", &a->lt_matmul, &missing);
  bind(lt, "cublasLtMatmulDescCreate", &a->lt_desc_create, &missing);
  bind(lt, "cublasLtMatmulDescDestroy", &a->lt_desc_destroy, &missing);
  bind(lt, "cublasLtMatmulDescSetAttribute", &a->lt_desc_set, &missing);
  bind(lt, "cublasLtMatrixLayoutCreate", &a->lt_layout_create, &missing);
  bind(lt, "cublasLtMatrixLayoutDestroy", &a->lt_layout_destroy, &missing);
  bind(lt, "cublasLtMatrixLayoutSetAttribute", &a->lt_layout_set, &missing);
  bind(lt, "cublasLtMatmulPreferenceCreate", &a->lt_pref_create, &missing);
  bind(lt, "cublasLtMatmulPreferenceDestroy", &a->lt_pref_destroy, &missing);
  bind(lt, "cublasLtMatmulPreferenceSetAttribute", &a->lt_pref_set, &missing);
  bind(lt, "cublasLtMatmulAlgoGetHeuristic", &a->lt_heuristic, &missing);
  if (!missing.empty()) {
    *error = "the CUDA libraries found lack " + missing;
    return false;
  }
  return true;
}

std::string device_name(int device) {
  void* cu = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cu == nullptr) return {};
  using InitFn = int (*)(unsigned);
  using GetFn = int (*)(int*, int);  // CUdevice is an int handle
  using NameFn = int (*)(char*, int, int);
  auto init = reinterpret_cast<InitFn>(::dlsym(cu, "cuInit"));
  auto get = reinterpret_cast<GetFn>(::dlsym(cu, "cuDeviceGet"));
  auto name = reinterpret_cast<NameFn>(::dlsym(cu, "cuDeviceGetName"));
  char buf[256] = {};
  int handle = 0;
  if (init == nullptr || get == nullptr || name == nullptr || init(0) != 0 ||
      get(&handle, device) != 0 || name(buf, sizeof(buf) - 1, handle) != 0) {
    return {};
  }
  return buf;
}

}  // namespace xpu_timer::replay
