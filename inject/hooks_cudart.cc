// Hooks for CUDA runtime entry points of the application's libcudart:
//  - kernel launches (__cudaLaunchKernel, which the launch code nvcc 13
//    generates for `kernel<<<...>>>` calls, its _ptsz twin, cudaLaunchKernel,
//    cudaLaunchKernelExC, cudaLaunchCooperativeKernel) are counted, never
//    timed on the GPU: thousands per step, a plain add to a counter line of the
//    launching thread's own (inject/per_thread_counter.h); one in 16 of a
//    thread's launches is timed, for the host's time blocked on a full
//    launch queue (inject/host_blocked.h);
//  - synchronisations (cudaStreamSynchronize, cudaEventSynchronize,
//    cudaDeviceSynchronize) and copies to the host are timed on the host:
//    the host blocked on its GPU (inject/host_blocked.h);
//  - device allocations and frees (cudaMalloc, cudaMallocAsync,
//    cudaMallocFromPoolAsync, cudaFree, cudaFreeAsync) are counted with their
//    bytes; a free's bytes come from the allocation we saw; the synchronous
//    ones (cudaMalloc, cudaFree) are also flight-recorder events;
//  - copies (cudaMemcpy, cudaMemcpyAsync, cudaMemcpyPeer, cudaMemcpyPeerAsync)
//    are operations like GEMMs (inject/timed_call.h): named by direction,
//    their bytes counted on every call, timed when sampled, and in the flight
//    recorder.
// What a library launches or copies through its own statically linked
// runtime (cuBLAS, NCCL) or the driver API (Triton) is not seen here.
// The user's call happens exactly once and its status is returned unchanged.
#include <cuda_runtime_api.h>

#include <mutex>
#include <unordered_map>

#include "common/clock.h"
#include "inject/bench_parts.h"
#include "inject/call_cache.h"
#include "inject/cuda_runtime_calls.h"
#include "inject/hook_export.h"
#include "inject/host_blocked.h"
#include "inject/nvtx_ranges.h"
#include "inject/real_functions.h"
#include "inject/runtime.h"
#include "inject/timed_call.h"

// The entry points of nvcc 13's launch code (crt/device_functions.h declares
// them only for nvcc's own compilations).
extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                          size_t shared_mem, cudaStream_t stream);
extern "C" cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block,
                                               void** args, size_t shared_mem, cudaStream_t stream);

namespace xpu_timer::inject {

namespace {

using proto::OpName;

RealFunction<decltype(&::cudaLaunchKernel)> real_launch(RealLib::kCudart, "cudaLaunchKernel");
RealFunction<decltype(&::__cudaLaunchKernel)> real_nvcc_launch(RealLib::kCudart,
                                                               "__cudaLaunchKernel");
RealFunction<decltype(&::__cudaLaunchKernel_ptsz)> real_nvcc_launch_ptsz(RealLib::kCudart,
                                                                         "__cudaLaunchKernel_ptsz");
RealFunction<decltype(&::cudaLaunchKernelExC)> real_launch_ex(RealLib::kCudart,
                                                              "cudaLaunchKernelExC");
RealFunction<decltype(&::cudaLaunchCooperativeKernel)> real_launch_coop(
    RealLib::kCudart, "cudaLaunchCooperativeKernel");
RealFunction<decltype(&::cudaMalloc)> real_malloc(RealLib::kCudart, "cudaMalloc");
RealFunction<decltype(&::cudaMallocAsync)> real_malloc_async(RealLib::kCudart, "cudaMallocAsync");
RealFunction<decltype(&::cudaMallocFromPoolAsync)> real_malloc_pool(RealLib::kCudart,
                                                                    "cudaMallocFromPoolAsync");
RealFunction<decltype(&::cudaFree)> real_free(RealLib::kCudart, "cudaFree");
RealFunction<decltype(&::cudaFreeAsync)> real_free_async(RealLib::kCudart, "cudaFreeAsync");
RealFunction<decltype(&::cudaMemcpy)> real_memcpy(RealLib::kCudart, "cudaMemcpy");
RealFunction<decltype(&::cudaMemcpyAsync)> real_memcpy_async(RealLib::kCudart, "cudaMemcpyAsync");
RealFunction<decltype(&::cudaMemcpyPeer)> real_memcpy_peer(RealLib::kCudart, "cudaMemcpyPeer");
RealFunction<decltype(&::cudaMemcpyPeerAsync)> real_memcpy_peer_async(RealLib::kCudart,
                                                                      "cudaMemcpyPeerAsync");
RealFunction<decltype(&::cudaStreamSynchronize)> real_stream_sync(RealLib::kCudart,
                                                                  "cudaStreamSynchronize");
RealFunction<decltype(&::cudaEventSynchronize)> real_event_sync(RealLib::kCudart,
                                                                "cudaEventSynchronize");
RealFunction<decltype(&::cudaDeviceSynchronize)> real_device_sync(RealLib::kCudart,
                                                                  "cudaDeviceSynchronize");
RealFunction<decltype(&::cudaPointerGetAttributes)> real_pointer_attributes(
    RealLib::kCudart, "cudaPointerGetAttributes");

// What the hook returns when the real function cannot be found (logged once
// by RealFunction): the application gets an error, never a crash.
constexpr cudaError_t kNoRealFunction = cudaErrorSymbolNotFound;

// The state when this call is to be counted: not nested in another hook (a
// library of ours calling the runtime), the runtime active.
RuntimeState* counting_runtime() {
  HookScope scope;
  return scope.nested() ? nullptr : active_runtime();
}

// The most frequent hooked call: the fast path reads the mode and this
// thread's hook depth and adds to this thread's own slot; only a launch
// before initialisation, or while paused or passing through, takes the
// general path. True for the launch in HostBlocked::kLaunchTimedEvery of
// its thread that is timed (inject/host_blocked.h).
bool count_launch() {
  if (bench_part_off(BenchPart::kLaunchCount)) return false;  // a benchmark's
  if (inside_hook()) return false;
  if (mode() != Mode::kActive && counting_runtime() == nullptr) return false;
  return HostBlocked::times_launch(PerThreadCounter::add_one());
}

// The hooks below pass an untimed launch on as a tail call (a jump, the
// same arguments in the same places: nothing of ours stays on the stack),
// and time the one count_launch() chose around this call of their own.
template <typename Fn, typename... Args>
cudaError_t timed_launch(Fn fn, Args... args) {
  const uint64_t start_ns = monotonic_ns();
  const cudaError_t status = fn(args...);
  HostBlocked::add_timed_launch(monotonic_ns() - start_ns);
  return status;
}

// A synchronisation: the application's (not one of ours inside a hook, nor
// while timing is off) counts its whole time as blocked on the GPU.
template <typename Fn, typename... Args>
cudaError_t synchronise(Fn fn, Args... args) {
  if (counting_runtime() == nullptr) return fn(args...);
  const uint64_t start_ns = monotonic_ns();
  const cudaError_t status = fn(args...);
  HostBlocked::add_sync(monotonic_ns() - start_ns);
  return status;
}

// Sizes of the allocations we saw, for the bytes of their frees. Allocations
// are rare (PyTorch's caching allocator reuses its blocks), so one lock.
struct Allocations {
  std::mutex mu;
  std::unordered_map<uintptr_t, uint64_t> bytes;
};
Allocations& allocations() {
  static auto* a = new Allocations();  // never destroyed: frees may come during exit
  return *a;
}

// Device frees seen (cudaFree, cudaFreeAsync): the epoch of the copy
// direction cache below.
std::atomic<uint64_t> g_free_epoch{0};
void note_free() { g_free_epoch.fetch_add(1, std::memory_order_relaxed); }
uint64_t free_epoch() { return g_free_epoch.load(std::memory_order_relaxed); }

// True when it was counted.
bool count_malloc(RuntimeState* st, cudaError_t status, void** ptr, size_t bytes) {
  if (st == nullptr || status != cudaSuccess || ptr == nullptr || *ptr == nullptr) return false;
  st->runtime_calls.mallocs.fetch_add(1, std::memory_order_relaxed);
  st->runtime_calls.malloc_bytes.fetch_add(bytes, std::memory_order_relaxed);
  try {
    Allocations& a = allocations();
    std::lock_guard<std::mutex> lock(a.mu);
    a.bytes[reinterpret_cast<uintptr_t>(*ptr)] = bytes;
  } catch (...) {  // out of memory: this free's bytes will be unknown
    st->counters.hook_errors.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

// A synchronous allocation or free as a flight-recorder event (host time of
// the call: cudaMalloc and cudaFree wait for the device). The stream-ordered
// ones are only counted: an application using them may call them for every
// tensor, which would crowd GPU work out of the recorder.
void record_host_call(HostEvent kind, uint64_t start_ns, uint64_t bytes) {
  RangeRecord r{};
  r.start_ns = start_ns;
  r.end_ns = monotonic_ns();
  r.tid = this_thread_id();
  r.kind = kind;
  r.value = bytes;
  emit_host_event(r);
}

// Takes the allocation's size out before the real free (another thread may
// get the same address from its next allocation); `restore` puts it back
// when the free failed.
uint64_t take_allocation(void* ptr, bool* known) {
  Allocations& a = allocations();
  std::lock_guard<std::mutex> lock(a.mu);
  auto it = a.bytes.find(reinterpret_cast<uintptr_t>(ptr));
  *known = it != a.bytes.end();
  if (!*known) return 0;
  const uint64_t bytes = it->second;
  a.bytes.erase(it);
  return bytes;
}

void restore_allocation(void* ptr, uint64_t bytes) {
  try {
    Allocations& a = allocations();
    std::lock_guard<std::mutex> lock(a.mu);
    a.bytes[reinterpret_cast<uintptr_t>(ptr)] = bytes;
  } catch (...) {
  }
}

template <typename Fn, typename... Args>
cudaError_t counted_free(RealFunction<Fn>& real, void* ptr, Args... args) {
  const Fn fn = real.get();
  if (fn == nullptr) return kNoRealFunction;
  // cudaFree(nullptr) is how programs create their context: no free.
  RuntimeState* st = ptr != nullptr ? counting_runtime() : nullptr;
  if (st == nullptr) {
    const cudaError_t status = fn(ptr, args...);
    if (status == cudaSuccess && ptr != nullptr) note_free();  // even unwatched: the cache below
    return status;
  }
  bool known = false;
  const uint64_t bytes = take_allocation(ptr, &known);
  const uint64_t start_ns = monotonic_ns();
  const cudaError_t status = fn(ptr, args...);
  if (status != cudaSuccess) {
    if (known) restore_allocation(ptr, bytes);
    return status;
  }
  st->runtime_calls.frees.fetch_add(1, std::memory_order_relaxed);
  st->runtime_calls.free_bytes.fetch_add(bytes, std::memory_order_relaxed);
  note_free();
  if constexpr (sizeof...(Args) == 0) {  // cudaFree, not cudaFreeAsync
    record_host_call(HostEvent::kDeviceFree, start_ns, bytes);
  }
  return status;
}

bool is_device_memory(const cudaPointerAttributes& a) {
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// The direction of a copy. cudaMemcpyDefault leaves it to the runtime (unified
// addressing): we ask it, one cudaPointerGetAttributes per side; an answer we
// cannot get makes it MemcpyOther.
OpName copy_name(cudaMemcpyKind kind, const void* dst, const void* src) {
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return OpName::kMemcpyH2D;
    case cudaMemcpyDeviceToHost:
      return OpName::kMemcpyD2H;
    case cudaMemcpyDeviceToDevice:
      return OpName::kMemcpyD2D;
    case cudaMemcpyHostToHost:
      return OpName::kMemcpyOther;
    case cudaMemcpyDefault:
      break;
  }
  if (kind != cudaMemcpyDefault) return OpName::kMemcpyOther;
  const auto attributes = real_pointer_attributes.get();
  if (attributes == nullptr) return OpName::kMemcpyOther;
  cudaPointerAttributes d{}, s{};
  if (attributes(&d, dst) != cudaSuccess || attributes(&s, src) != cudaSuccess) {
    cuda_calls().get_last_error();  // ours: the application must not see it
    return OpName::kMemcpyOther;
  }
  const bool to_device = is_device_memory(d), from_device = is_device_memory(s);
  if (to_device && from_device)
    return d.device != s.device ? OpName::kMemcpyPeer : OpName::kMemcpyD2D;
  if (to_device) return OpName::kMemcpyH2D;
  if (from_device) return OpName::kMemcpyD2H;
  return OpName::kMemcpyOther;
}

// The directions of cudaMemcpyDefault copies this thread resolved, by the
// exact (dst, src) pair and the count of device frees we saw at the time: a
// sampled-out copy between the same addresses with no free in between
// makes no cudaPointerGetAttributes (a device address keeps its kind until
// it is freed). A free we do not see (through the driver API) followed by
// a reuse of the address as memory of another kind would name a sampled-out
// copy by the old direction; a timed copy always asks the runtime and
// corrects the entry.
struct CopyKey {
  uintptr_t dst, src;
  uint64_t free_epoch;
};
__attribute__((tls_model("initial-exec"))) thread_local CallCache<CopyKey, OpName> t_directions;

OpName cached_copy_name(cudaMemcpyKind kind, const void* dst, const void* src) {
  if (kind != cudaMemcpyDefault) return copy_name(kind, dst, src);
  const CopyKey key{reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src),
                    free_epoch()};
  OpName name = OpName::kMemcpyOther;
  if (!t_directions.find(key, &name)) {
    name = copy_name(kind, dst, src);
    t_directions.store(key, name);
  }
  return name;
}

// Timed copies: the runtime's answer, which also refreshes the cache.
OpName exact_copy_name(cudaMemcpyKind kind, const void* dst, const void* src) {
  const OpName name = copy_name(kind, dst, src);
  if (kind == cudaMemcpyDefault) {
    t_directions.store(
        CopyKey{reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), free_epoch()},
        name);
  }
  return name;
}

// A copy of `bytes` on `stream`: timed like a GEMM (counted on every call,
// timed when sampled). `name_of(bool exact)` -> OpName runs only when we
// count it; exact only for a timed call (the sampling decision is taken on
// the cheap name).
template <typename Fn, typename NameOf, typename... Args>
cudaError_t timed_copy(RealFunction<Fn>& real, NameOf&& name_of, size_t bytes, cudaStream_t stream,
                       Args... args) {
  const Fn fn = real.get();
  if (fn == nullptr) return kNoRealFunction;
  HookScope scope;
  RuntimeState* st = scope.nested() ? nullptr : active_runtime();
  if (st == nullptr) return fn(args...);
  OpDesc d;
  d.name = name_of(false);
  d.dtype = proto::DType::kU8;
  d.bytes = bytes;
  d.count = bytes;
  TimedCall call;
  call.begin_lazy(st, d, stream, [&](OpDesc* exact, cudaStream_t*) {
    exact->name = name_of(true);
    return true;
  });
  // A copy to the host returns once it and the work before it on its stream
  // are done (pageable memory: `.item()`, `.cpu()`): the host waited for its
  // GPU (inject/host_blocked.h). One into pinned memory returns at once.
  const bool to_host = d.name == OpName::kMemcpyD2H;
  const uint64_t start_ns = to_host ? monotonic_ns() : 0;
  const cudaError_t status = fn(args...);
  if (to_host) HostBlocked::add_sync(monotonic_ns() - start_ns);
  call.end(status == cudaSuccess);
  return status;
}

}  // namespace
}  // namespace xpu_timer::inject

using namespace xpu_timer::inject;  // NOLINT: hook definitions below are extern "C"
using xpu_timer::monotonic_ns;
using xpu_timer::proto::OpName;

XPU_TIMER_HOOK cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                                            size_t shared_mem, cudaStream_t stream) {
  const auto fn = real_launch.get();
  if (fn == nullptr) return kNoRealFunction;
  if (!count_launch()) return fn(func, grid, block, args, shared_mem, stream);
  return timed_launch(fn, func, grid, block, args, shared_mem, stream);
}

XPU_TIMER_HOOK cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block,
                                              void** args, size_t shared_mem, cudaStream_t stream) {
  const auto fn = real_nvcc_launch.get();
  if (fn == nullptr) return kNoRealFunction;
  if (!count_launch()) return fn(kernel, grid, block, args, shared_mem, stream);
  return timed_launch(fn, kernel, grid, block, args, shared_mem, stream);
}

XPU_TIMER_HOOK cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block,
                                                   void** args, size_t shared_mem,
                                                   cudaStream_t stream) {
  const auto fn = real_nvcc_launch_ptsz.get();
  if (fn == nullptr) return kNoRealFunction;
  if (!count_launch()) return fn(kernel, grid, block, args, shared_mem, stream);
  return timed_launch(fn, kernel, grid, block, args, shared_mem, stream);
}

XPU_TIMER_HOOK cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                               void** args) {
  const auto fn = real_launch_ex.get();
  if (fn == nullptr) return kNoRealFunction;
  if (!count_launch()) return fn(config, func, args);
  return timed_launch(fn, config, func, args);
}

XPU_TIMER_HOOK cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block,
                                                       void** args, size_t shared_mem,
                                                       cudaStream_t stream) {
  const auto fn = real_launch_coop.get();
  if (fn == nullptr) return kNoRealFunction;
  if (!count_launch()) return fn(func, grid, block, args, shared_mem, stream);
  return timed_launch(fn, func, grid, block, args, shared_mem, stream);
}

XPU_TIMER_HOOK cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  const auto fn = real_malloc.get();
  if (fn == nullptr) return kNoRealFunction;
  RuntimeState* st = counting_runtime();
  const uint64_t start_ns = st != nullptr ? monotonic_ns() : 0;
  const cudaError_t status = fn(ptr, bytes);
  if (count_malloc(st, status, ptr, bytes)) {
    record_host_call(HostEvent::kDeviceMalloc, start_ns, bytes);
  }
  return status;
}

XPU_TIMER_HOOK cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t stream) {
  const auto fn = real_malloc_async.get();
  if (fn == nullptr) return kNoRealFunction;
  RuntimeState* st = counting_runtime();
  const cudaError_t status = fn(ptr, bytes, stream);
  count_malloc(st, status, ptr, bytes);
  return status;
}

XPU_TIMER_HOOK cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t bytes, cudaMemPool_t pool,
                                                   cudaStream_t stream) {
  const auto fn = real_malloc_pool.get();
  if (fn == nullptr) return kNoRealFunction;
  RuntimeState* st = counting_runtime();
  const cudaError_t status = fn(ptr, bytes, pool, stream);
  count_malloc(st, status, ptr, bytes);
  return status;
}

XPU_TIMER_HOOK cudaError_t cudaFree(void* ptr) { return counted_free(real_free, ptr); }

XPU_TIMER_HOOK cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  return counted_free(real_free_async, ptr, stream);
}

XPU_TIMER_HOOK cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes,
                                      cudaMemcpyKind kind) {
  // The legacy default stream: a synchronous copy orders with it.
  return timed_copy(
      real_memcpy,
      [&](bool exact) {
        return exact ? exact_copy_name(kind, dst, src) : cached_copy_name(kind, dst, src);
      },
      bytes, nullptr, dst, src, bytes, kind);
}

XPU_TIMER_HOOK cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes,
                                           cudaMemcpyKind kind, cudaStream_t stream) {
  return timed_copy(
      real_memcpy_async,
      [&](bool exact) {
        return exact ? exact_copy_name(kind, dst, src) : cached_copy_name(kind, dst, src);
      },
      bytes, stream, dst, src, bytes, kind, stream);
}

XPU_TIMER_HOOK cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src,
                                          int src_device, size_t bytes) {
  return timed_copy(
      real_memcpy_peer, [](bool) { return OpName::kMemcpyPeer; }, bytes, nullptr, dst, dst_device,
      src, src_device, bytes);
}

XPU_TIMER_HOOK cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src,
                                               int src_device, size_t bytes, cudaStream_t stream) {
  return timed_copy(
      real_memcpy_peer_async, [](bool) { return OpName::kMemcpyPeer; }, bytes, stream, dst,
      dst_device, src, src_device, bytes, stream);
}

XPU_TIMER_HOOK cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  const auto fn = real_stream_sync.get();
  if (fn == nullptr) return kNoRealFunction;
  return synchronise(fn, stream);
}

XPU_TIMER_HOOK cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  const auto fn = real_event_sync.get();
  if (fn == nullptr) return kNoRealFunction;
  return synchronise(fn, event);
}

XPU_TIMER_HOOK cudaError_t cudaDeviceSynchronize() {
  const auto fn = real_device_sync.get();
  if (fn == nullptr) return kNoRealFunction;
  return synchronise(fn);
}
