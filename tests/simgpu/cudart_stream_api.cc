// Stream, capture, graph and host-function entry points of the simulated
// libcudart.so.13.
#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <vector>

#include "common/env_config.h"
#include "tests/simgpu/error_state.h"
#include "tests/simgpu/event.h"
#include "tests/simgpu/kernel_launch.h"
#include "tests/simgpu/real_gpu_traits.h"
#include "tests/simgpu/sim_clock.h"
#include "tests/simgpu/sim_ext.h"
#include "tests/simgpu/stream.h"

namespace sim = xpu_timer::simgpu;

// A captured graph: the durations of its kernels, replayed in order.
struct CUgraph_st {
  std::vector<uint64_t> kernels;
};
struct CUgraphExec_st {
  std::vector<uint64_t> kernels;
};

namespace {

std::atomic<uint64_t> g_next_capture_id{1};

cudaError_t create_stream(cudaStream_t* out, unsigned flags, int priority) {
  if (out == nullptr || (flags & ~static_cast<unsigned>(cudaStreamNonBlocking)) != 0) {
    return sim::record_error(cudaErrorInvalidValue);
  }
  int device = 0;
  cudaGetDevice(&device);
  auto stream = sim::StreamRegistry::instance().create(device, flags, priority);
  if (!stream) return sim::record_error(cudaErrorMemoryAllocation);
  *out = stream->handle();
  return cudaSuccess;
}

std::shared_ptr<sim::Stream> stream_of(cudaStream_t handle) {
  return sim::StreamRegistry::instance().resolve(handle);
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  XPU_SIM_ENTRY();
  return create_stream(stream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  XPU_SIM_ENTRY();
  return create_stream(stream, flags, 0);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  XPU_SIM_ENTRY();
  return create_stream(stream, flags, priority);
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  XPU_SIM_ENTRY();
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = -5;
  return cudaSuccess;
}

cudaError_t cudaStreamGetPriority(cudaStream_t handle, int* priority) {
  XPU_SIM_ENTRY();
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (priority == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *priority = stream->priority();
  return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t handle, unsigned int* flags) {
  XPU_SIM_ENTRY();
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (flags == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *flags = stream->flags();
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  XPU_SIM_ENTRY();
  if (sim::StreamRegistry::instance().is_default(handle) ||
      !sim::StreamRegistry::instance().destroy(handle)) {
    return sim::record_error(cudaErrorInvalidResourceHandle);
  }
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  XPU_SIM_ENTRY();
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (stream->capturing(nullptr)) return sim::record_error(cudaErrorStreamCaptureUnsupported);
  stream->wait_idle();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  XPU_SIM_ENTRY();
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (stream->capturing(nullptr)) return sim::record_error(cudaErrorStreamCaptureUnsupported);
  return stream->idle() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t handle, cudaEvent_t event_handle, unsigned int flags) {
  XPU_SIM_ENTRY();
  auto stream = stream_of(handle);
  auto event = sim::EventRegistry::instance().resolve(event_handle);
  if (!stream || !event) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (flags != 0 && flags != cudaEventWaitExternal) return sim::record_error(cudaErrorInvalidValue);
  const uint64_t seq = event->latest_record();
  if (seq == 0) return cudaSuccess;  // waiting on a never-recorded event is a no-op
  // The stream resumes at the later of its own time and the event's time
  // (plus this rank's fixed skew, real_gpu_traits.h).
  const uint64_t skew = sim::rank_skew_ns();
  stream->enqueue([event, seq, skew](uint64_t start) {
    event->wait(seq);
    const uint64_t t = event->time_ns() + skew;
    if (t > start) sim::sleep_until_ns(t);
    return t > start ? t : start;
  });
  return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t handle, cudaHostFn_t fn, void* user_data) {
  XPU_SIM_ENTRY();
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (fn == nullptr) return sim::record_error(cudaErrorInvalidValue);
  if (!stream->enqueue([fn, user_data](uint64_t) {
        fn(user_data);
        return sim::now_ns();
      })) {
    return sim::record_error(cudaErrorStreamCaptureUnsupported);
  }
  return cudaSuccess;
}

// A kernel of the user's own (not a GEMM, not a collective): it keeps its
// stream busy XPU_TIMER_SIM_KERNEL_US (default 2 us); its function and
// arguments are ignored.
namespace {
uint64_t user_kernel_ns() {
  XPU_SIM_ENTRY();
  static const uint64_t ns = [] {
    const double us = xpu_timer::env_double("XPU_TIMER_SIM_KERNEL_US", 2.0);
    return static_cast<uint64_t>((us > 0 ? us : 2.0) * 1000.0);
  }();
  return ns;
}

cudaError_t launch_user_kernel(const void* func, cudaStream_t handle) {
  XPU_SIM_ENTRY();
  if (func == nullptr) return sim::record_error(cudaErrorInvalidDeviceFunction);
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  sim::launch_kernel(*stream, user_kernel_ns());
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaLaunchKernel(const void* func, dim3, dim3, void**, size_t, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  return launch_user_kernel(func, stream);
}

cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3, dim3, void**, size_t,
                                        cudaStream_t stream) {
  XPU_SIM_ENTRY();
  return launch_user_kernel(func, stream);
}

// What nvcc 13's launch code calls for `kernel<<<...>>>` (the sim takes any
// non-null handle as a kernel).
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3, dim3, void**, size_t,
                               cudaStream_t stream) {
  XPU_SIM_ENTRY();
  return launch_user_kernel(reinterpret_cast<const void*>(kernel), stream);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void**) {
  XPU_SIM_ENTRY();
  if (config == nullptr) return sim::record_error(cudaErrorInvalidValue);
  return launch_user_kernel(func, config->stream);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t handle, enum cudaStreamCaptureMode mode) {
  XPU_SIM_ENTRY();
  (void)mode;
  if (sim::StreamRegistry::instance().is_default(handle)) {
    return sim::record_error(cudaErrorStreamCaptureUnsupported);
  }
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (!stream->begin_capture(g_next_capture_id.fetch_add(1))) {
    return sim::record_error(cudaErrorIllegalState);
  }
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t* graph) {
  XPU_SIM_ENTRY();
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (graph == nullptr) return sim::record_error(cudaErrorInvalidValue);
  auto g = std::make_unique<CUgraph_st>();
  if (!stream->end_capture(&g->kernels)) return sim::record_error(cudaErrorIllegalState);
  *graph = g.release();
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t handle, enum cudaStreamCaptureStatus* status) {
  XPU_SIM_ENTRY();
  xpu_sim_count_call(XPU_SIM_STREAM_IS_CAPTURING);
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (status == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *status =
      stream->capturing(nullptr) ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t handle, enum cudaStreamCaptureStatus* status_out,
                                     unsigned long long* id_out, cudaGraph_t* graph_out,
                                     const cudaGraphNode_t** dependencies_out,
                                     const cudaGraphEdgeData** edge_data_out,
                                     size_t* num_dependencies_out) {
  XPU_SIM_ENTRY();
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (status_out == nullptr) return sim::record_error(cudaErrorInvalidValue);
  uint64_t id = 0;
  const bool capturing = stream->capturing(&id);
  *status_out = capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  if (id_out != nullptr) *id_out = capturing ? id : 0;
  if (graph_out != nullptr) *graph_out = nullptr;
  if (dependencies_out != nullptr) *dependencies_out = nullptr;
  if (edge_data_out != nullptr) *edge_data_out = nullptr;
  if (num_dependencies_out != nullptr) *num_dependencies_out = 0;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags) {
  XPU_SIM_ENTRY();
  (void)flags;
  if (exec == nullptr || graph == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->kernels};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t handle) {
  XPU_SIM_ENTRY();
  auto stream = stream_of(handle);
  if (!stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (exec == nullptr) return sim::record_error(cudaErrorInvalidValue);
  for (uint64_t ns : exec->kernels) sim::launch_kernel(*stream, ns);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  XPU_SIM_ENTRY();
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  XPU_SIM_ENTRY();
  delete graph;
  return cudaSuccess;
}

}  // extern "C"
