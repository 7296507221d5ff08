// The CUDA runtime functions xpu-timer itself calls (events, capture state,
// device selection), resolved from the libcudart the application loaded: the
// library has no DT_NEEDED on any CUDA library.
//
// Threads: loaded once during Runtime initialisation (before any other
// thread of ours exists), read-only afterwards by hooks and the Poller.
#pragma once

#include <cuda_runtime_api.h>

namespace xpu_timer::inject {

struct CudaRuntimeCalls {
  decltype(&::cudaEventCreateWithFlags) event_create_with_flags = nullptr;
  decltype(&::cudaEventRecord) event_record = nullptr;
  decltype(&::cudaEventQuery) event_query = nullptr;
  decltype(&::cudaEventElapsedTime) event_elapsed_time = nullptr;
  decltype(&::cudaEventDestroy) event_destroy = nullptr;
  decltype(&::cudaStreamIsCapturing) stream_is_capturing = nullptr;
  decltype(&::cudaGetDevice) get_device = nullptr;
  decltype(&::cudaSetDevice) set_device = nullptr;
  decltype(&::cudaGetLastError) get_last_error = nullptr;
  // Optional: lets the Poller query events while another thread captures a
  // graph in global mode (as PyTorch's NCCL watchdog does).
  decltype(&::cudaThreadExchangeStreamCaptureMode) thread_exchange_capture_mode = nullptr;
};

// Resolves every function; false (and a log line naming the missing one)
// when a required one is absent.
bool load_cuda_runtime_calls(CudaRuntimeCalls* out);

// The process-wide table, valid once Runtime initialisation succeeded.
const CudaRuntimeCalls& cuda_calls();
CudaRuntimeCalls* mutable_cuda_calls();

}  // namespace xpu_timer::inject
