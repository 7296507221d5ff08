// Event entry points of the simulated libcudart.so.13. Error codes follow the
// CUDA runtime: querying a never-recorded event succeeds; ElapsedTime on a
// never-recorded or timing-disabled event is cudaErrorInvalidResourceHandle,
// on a pending one cudaErrorNotReady.
#include <cuda_runtime_api.h>

#include "tests/simgpu/error_state.h"
#include "tests/simgpu/event.h"
#include "tests/simgpu/sim_ext.h"
#include "tests/simgpu/stream.h"

namespace sim = xpu_timer::simgpu;

namespace {

constexpr unsigned kEventFlags =
    cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;

cudaError_t record(cudaEvent_t handle, cudaStream_t stream_handle) {
  auto event = sim::EventRegistry::instance().resolve(handle);
  auto stream = sim::StreamRegistry::instance().resolve(stream_handle);
  if (!event || !stream) return sim::record_error(cudaErrorInvalidResourceHandle);
  // While capturing, CUDA adds a record node to the graph; the event itself
  // does not change until the graph is launched, which the sim does not model.
  if (stream->capturing(nullptr)) return cudaSuccess;
  const uint64_t seq = event->begin_record();
  // Completed atomically with the stream counting the marker done, so event
  // and stream queries never disagree (see StreamDone).
  auto marker = [](uint64_t start) { return start; };
  auto done = [event, seq](uint64_t time_ns) { event->complete(seq, time_ns); };
  if (!stream->enqueue(marker, done)) event->complete(seq, 0);  // capture began meanwhile
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  XPU_SIM_ENTRY();
  if (event == nullptr) return sim::record_error(cudaErrorInvalidValue);
  *event = sim::EventRegistry::instance().create(cudaEventDefault)->handle();
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  XPU_SIM_ENTRY();
  if (event == nullptr || (flags & ~kEventFlags) != 0) {
    return sim::record_error(cudaErrorInvalidValue);
  }
  if ((flags & cudaEventInterprocess) != 0 && (flags & cudaEventDisableTiming) == 0) {
    return sim::record_error(cudaErrorInvalidValue);
  }
  *event = sim::EventRegistry::instance().create(flags)->handle();
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  XPU_SIM_ENTRY();
  if (!sim::EventRegistry::instance().destroy(event)) {
    return sim::record_error(cudaErrorInvalidResourceHandle);
  }
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  XPU_SIM_ENTRY();
  return record(event, stream);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  XPU_SIM_ENTRY();
  if ((flags & ~static_cast<unsigned>(cudaEventRecordExternal)) != 0) {
    return sim::record_error(cudaErrorInvalidValue);
  }
  return record(event, stream);
}

cudaError_t cudaEventQuery(cudaEvent_t handle) {
  XPU_SIM_ENTRY();
  auto event = sim::EventRegistry::instance().resolve(handle);
  if (!event) return sim::record_error(cudaErrorInvalidResourceHandle);
  return event->state() == sim::Event::State::kPending ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t handle) {
  XPU_SIM_ENTRY();
  auto event = sim::EventRegistry::instance().resolve(handle);
  if (!event) return sim::record_error(cudaErrorInvalidResourceHandle);
  event->wait(0);
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  XPU_SIM_ENTRY();
  if (ms == nullptr) return sim::record_error(cudaErrorInvalidValue);
  auto a = sim::EventRegistry::instance().resolve(start);
  auto b = sim::EventRegistry::instance().resolve(end);
  if (!a || !b) return sim::record_error(cudaErrorInvalidResourceHandle);
  if (a->timing_disabled() || b->timing_disabled()) {
    return sim::record_error(cudaErrorInvalidResourceHandle);
  }
  const auto sa = a->state();
  const auto sb = b->state();
  if (sa == sim::Event::State::kNeverRecorded || sb == sim::Event::State::kNeverRecorded) {
    return sim::record_error(cudaErrorInvalidResourceHandle);
  }
  if (sa != sim::Event::State::kComplete || sb != sim::Event::State::kComplete) {
    return cudaErrorNotReady;
  }
  const double diff_ns = static_cast<double>(b->time_ns()) - static_cast<double>(a->time_ns());
  *ms = static_cast<float>(diff_ns / 1e6);
  return cudaSuccess;
}

}  // extern "C"
