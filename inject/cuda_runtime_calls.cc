#include "inject/cuda_runtime_calls.h"

#include "common/log.h"
#include "inject/real_functions.h"

namespace xpu_timer::inject {
namespace {

template <typename Fn>
bool load(Fn* slot, const char* name, bool required) {
  *slot = reinterpret_cast<Fn>(resolve_real(RealLib::kCudart, name));
  if (*slot == nullptr && required) {
    XPU_TIMER_LOG_WARN("CUDA runtime function %s not found in the process; timing is off", name);
    return false;
  }
  return true;
}

CudaRuntimeCalls g_calls;

}  // namespace

bool load_cuda_runtime_calls(CudaRuntimeCalls* out) {
  bool ok = true;
  ok &= load(&out->event_create_with_flags, "cudaEventCreateWithFlags", true);
  ok &= load(&out->event_record, "cudaEventRecord", true);
  ok &= load(&out->event_query, "cudaEventQuery", true);
  ok &= load(&out->event_elapsed_time, "cudaEventElapsedTime", true);
  ok &= load(&out->event_destroy, "cudaEventDestroy", true);
  ok &= load(&out->stream_is_capturing, "cudaStreamIsCapturing", true);
  ok &= load(&out->get_device, "cudaGetDevice", true);
  ok &= load(&out->set_device, "cudaSetDevice", true);
  ok &= load(&out->get_last_error, "cudaGetLastError", true);
  load(&out->thread_exchange_capture_mode, "cudaThreadExchangeStreamCaptureMode", false);
  return ok;
}

const CudaRuntimeCalls& cuda_calls() { return g_calls; }
CudaRuntimeCalls* mutable_cuda_calls() { return &g_calls; }

}  // namespace xpu_timer::inject
