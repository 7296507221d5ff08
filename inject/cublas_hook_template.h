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

// The stream a cuBLAS handle launches on; false (counted) when unknown. Also
// remembers it as the handle's last known stream (below).
bool cublas_stream_of(RuntimeState* st, cublasHandle_t handle, cudaStream_t* stream);
// The stream cublas_stream_of() last returned for `handle` on this thread
// (nullptr if none): what an untimed record carries to the flight recorder,
// where it only names the track of a GEMM drawn at its launch on the host.
cudaStream_t cublas_last_stream(cublasHandle_t handle);

// make_desc() -> OpDesc describes the operation from what the call gives
// without a library call; the sampling decision is taken on it.
// resolve(RuntimeState*, OpDesc*, cudaStream_t*) -> bool supplies the stream
// (and whatever else costs a library call) and runs only when the call is
// timed: a sampled-out GEMM makes no cuBLAS or CUDA call of ours.
// known_stream() -> cudaStream_t is the stream when the arguments give it,
// else the last known one (for the untimed record).
template <typename Fn, typename MakeDesc, typename KnownStream, typename Resolve, typename... Args>
cublasStatus_t timed_blas_call(RealFunction<Fn>& real, MakeDesc&& make_desc,
                               KnownStream&& known_stream, Resolve&& resolve,
                               Args... args) noexcept {
  const Fn fn = real.get();
  if (fn == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  HookScope scope;
  RuntimeState* st = scope.nested() ? nullptr : active_runtime();
  if (st == nullptr) return fn(args...);
  TimedCall call;
  call.begin_lazy(st, make_desc(), known_stream(),
                  [&](OpDesc* d, cudaStream_t* s) { return resolve(st, d, s); });
  const cublasStatus_t status = fn(args...);
  call.end(status == CUBLAS_STATUS_SUCCESS);
  return status;
}

}  // namespace xpu_timer::inject
