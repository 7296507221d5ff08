// The body shared by the cuBLAS and cuBLASLt hooks: resolve the real
// function, pass through when nested or not timing, else time the call on
// `stream`. The user's call happens exactly once and its status is returned
// unchanged. Threads: any user thread.
#pragma once

#include <cublas_api.h>

#include "inject/hook_export.h"
#include "inject/real_functions.h"
#include "inject/runtime.h"
#include "inject/timed_call.h"

namespace xpu_timer::inject {

// The stream a cuBLAS handle launches on; false (counted) when unknown.
bool cublas_stream_of(RuntimeState* st, cublasHandle_t handle, cudaStream_t* stream);

// GetStream(st, &stream) -> bool supplies the stream; MakeDesc() -> OpDesc the
// operation. Both run only when the call is timed.
template <typename Fn, typename GetStream, typename MakeDesc, typename... Args>
cublasStatus_t timed_blas_call(RealFunction<Fn>& real, GetStream&& get_stream, MakeDesc&& make_desc,
                               Args... args) noexcept {
  const Fn fn = real.get();
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  HookScope scope;
  RuntimeState* st = scope.nested() ? nullptr : active_runtime();
  cudaStream_t stream = nullptr;
  if (st == nullptr || !get_stream(st, &stream)) return fn(args...);
  TimedCall call;
  call.begin(st, make_desc(), stream);
  const cublasStatus_t status = fn(args...);
  call.end(status == CUBLAS_STATUS_SUCCESS);
  return status;
}

}  // namespace xpu_timer::inject
