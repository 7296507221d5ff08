#include "tests/simgpu/error_state.h"

namespace xpu_timer::simgpu {
namespace {

thread_local cudaError_t t_last_error = cudaSuccess;

struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};

// Texts as the CUDA 13 runtime prints them, for the codes the sim returns.
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "the operation cannot be performed in the present state"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorText* find(cudaError_t err) {
  for (const auto& e : kErrors) {
    if (e.code == err) return &e;
  }
  return nullptr;
}

}  // namespace

cudaError_t record_error(cudaError_t err) {
  if (err != cudaSuccess && err != cudaErrorNotReady) t_last_error = err;
  return err;
}

cudaError_t take_last_error() {
  const cudaError_t err = t_last_error;
  t_last_error = cudaSuccess;
  return err;
}

cudaError_t peek_last_error() { return t_last_error; }

const char* error_name(cudaError_t err) {
  const ErrorText* e = find(err);
  return e != nullptr ? e->name : "cudaErrorUnknown";
}

const char* error_string(cudaError_t err) {
  const ErrorText* e = find(err);
  return e != nullptr ? e->text : "unrecognized error code";
}

}  // namespace xpu_timer::simgpu
