// The CUDA runtime's per-thread "last error" and the names of error codes.
#pragma once

#include <cuda_runtime_api.h>

namespace xpu_timer::simgpu {

// Remembers `err` as the calling thread's last error (cudaSuccess and
// cudaErrorNotReady are not errors, as in CUDA) and returns it.
cudaError_t record_error(cudaError_t err);
cudaError_t take_last_error();
cudaError_t peek_last_error();
const char* error_name(cudaError_t err);
const char* error_string(cudaError_t err);

}  // namespace xpu_timer::simgpu
