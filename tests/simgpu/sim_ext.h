// C extension API of the simulated libcudart.so.13, used by the simulated
// cuBLAS, cuBLASLt and NCCL (and by tests) to put work on a stream without
// going through the public cuda* entry points, which an LD_PRELOADed hook
// library may interpose. Exported as xpu_sim_*@@libcudart.so.13.
#pragma once

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// CLOCK_MONOTONIC in nanoseconds (the clock of every simulated timestamp).
uint64_t xpu_sim_now_ns(void);
// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns` (EINTR-safe).
void xpu_sim_sleep_until_ns(uint64_t deadline_ns);

// Enqueues a "kernel" that keeps `stream` busy for `duration_ns`.
// While the stream is capturing, the kernel is appended to the capture instead.
cudaError_t xpu_sim_launch_kernel(cudaStream_t stream, uint64_t duration_ns);

// A task run on the stream's worker thread, in stream order. `start_ns` is the
// simulated time the stream reached the task; the function returns the
// simulated time it finished (>= start_ns), having slept until then itself.
typedef uint64_t (*xpu_sim_task_fn)(void* arg, uint64_t start_ns);
// Enqueues fn(arg, start); `destroy(arg)` (may be NULL) runs after fn, or
// immediately when the task is dropped because the stream is capturing
// (then *dropped is set to 1 when dropped is not NULL).
cudaError_t xpu_sim_enqueue_task(cudaStream_t stream, xpu_sim_task_fn fn, void* arg,
                                 void (*destroy)(void*), int* dropped);

// 1 when `stream` is a valid stream in capture mode, else 0.
int xpu_sim_stream_is_capturing(cudaStream_t stream);

// Number of kernels dropped or recorded by capture so far (tests).
uint64_t xpu_sim_captured_kernel_count(void);

// Library calls an interposing hook library makes on its own behalf to
// describe or time a call, counted so that tests can check which calls make
// them (a sampled-out GEMM or copy must make none).
enum XpuSimCountedCall {
  XPU_SIM_CUBLAS_GET_STREAM = 0,    // cublasGetStream_v2
  XPU_SIM_LT_LAYOUT_GET = 1,        // cublasLtMatrixLayoutGetAttribute
  XPU_SIM_LT_DESC_GET = 2,          // cublasLtMatmulDescGetAttribute
  XPU_SIM_POINTER_ATTRIBUTES = 3,   // cudaPointerGetAttributes
  XPU_SIM_STREAM_IS_CAPTURING = 4,  // cudaStreamIsCapturing
  XPU_SIM_COUNTED_CALLS = 5
};
void xpu_sim_count_call(int which);
// Calls of `which` so far in this process (0 for an unknown `which`).
uint64_t xpu_sim_call_count(int which);

// Every entry point of the simulated libraries notes its caller first
// (XPU_SIM_ENTRY). Calls made from the injected library's code
// (libxpu_timer_inject.so: its own calls and the calls its hooks pass on) on
// a thread that is not one of its own (named "xpu_timer_...") are counted by
// entry point, so that a test can hold the library to the calls it makes
// on the user's threads for each operation.
void xpu_sim_note_call(const char* entry_point, const void* return_address);
#define XPU_SIM_ENTRY() xpu_sim_note_call(__func__, __builtin_return_address(0))
// "name count" lines, one per entry point called so (sorted by name), into
// buf (NUL-terminated, cut to size); returns the length of the whole text.
size_t xpu_sim_user_thread_calls(char* buf, size_t size);
// The same for the calls the injected library makes on its own threads (its
// Poller's event queries), so that a test can hold it to what it asks of the
// driver per operation.
size_t xpu_sim_library_thread_calls(char* buf, size_t size);

#ifdef __cplusplus
}
#endif
