// The program's NVTX ranges and its training steps, as the rank sees them.
//
// NVTX (the NVIDIA Tools Extension, header-only since v3) loads the library
// named by NVTX_INJECTION64_PATH at the first NVTX call of each module that
// uses it (PyTorch, Megatron, NCCL each carry their own copy) and calls its
// InitializeInjectionNvtx2, which fills the module's function tables with
// ours (inject/nvtx_injection.cc). The supervisor points that variable at
// this library. Then:
//   - push/pop ranges (nvtxRangePush*, nvtxDomainRangePushEx: what
//     torch.cuda.nvtx.range_push and Megatron emit) nest per thread;
//   - start/end ranges (nvtxRangeStart*/End) may end on another thread;
//   - ranges of a named domain are ignored unless XPU_TIMER_NVTX_DOMAINS
//     lists the domain ("*": all); NCCL's own ranges (domain "NCCL") would
//     otherwise add a callback to every collective and flood the names;
//   - a finished range becomes a RangeRecord on RuntimeState::ranges; the
//     Poller folds it into the page's per-name table and the flight recorder.
// Steps: every range named XPU_TIMER_STEP_RANGE is one step; without it, the
// Python probes time the interval between two optimizer steps
// (xpu_timer_python_step, inject/python_probes.py).
//
// Cost on the user's thread: a clock read, a lock-free name lookup (a hash of
// the name) and, at the pop, one queue push. Nothing is recorded before the
// runtime is active, and a range call never starts the runtime.
//
// The same queue carries the rank's other host-side events: calls of traced
// Python functions (inject/python_tracer.h), folded per name like ranges;
// and, for the flight recorder and the timeline only, garbage collections
// and DataLoader waits (the Python probes, inject/python_probes.h) and
// synchronous device allocations and frees (inject/hooks_cudart.cc).
#pragma once

#include <cstdint>

#include "inject/range_names.h"

namespace xpu_timer::inject {

// What a RangeRecord is.
enum class HostEvent : uint8_t {
  kNvtxRange = 0,     // an NVTX range: name_id, depth
  kStep = 1,          // an optimizer step (the time since the previous one)
  kGcPause = 2,       // a garbage collection: value = objects freed, depth = generation
  kLoaderWait = 3,    // a DataLoader __next__ that returned a batch
  kDeviceMalloc = 4,  // a successful cudaMalloc: value = bytes
  kDeviceFree = 5,    // a successful cudaFree of a non-null pointer: value = bytes (0: unknown)
  kPythonCall = 6,    // a call of a traced Python function: name_id, depth (inject/python_tracer.h)
};

// A finished range, step or other host event, from a user thread to the Poller.
struct RangeRecord {
  uint64_t start_ns;  // CLOCK_MONOTONIC
  uint64_t end_ns;
  uint32_t tid;      // the thread that opened it
  int16_t depth;     // push/pop nesting depth (0: outermost); -1: a start/end range
  uint16_t name_id;  // RangeNames id (kNvtxRange, kPythonCall)
  HostEvent kind;
  uint8_t reserved[7];
  uint64_t value;  // see HostEvent
};

// Nesting deeper than this is counted as dropped, not recorded.
constexpr int kMaxRangeDepth = 32;
// Start/end ranges open at once; more are dropped.
constexpr int kMaxOpenRanges = 4096;

// Hands a finished event to the Poller (counted as dropped when its queue is
// full); nothing before the runtime is active, and it never starts it.
void emit_host_event(const RangeRecord& r);
// The calling thread's kernel id (cached per thread).
uint32_t this_thread_id();

// The process's names (one table: the page and the ring index it).
RangeNames& range_names();

// XPU_TIMER_STEP_RANGE, interned: the id of the range that marks a step, or
// -1 when steps come from the optimizer (read once).
int step_range_id();

}  // namespace xpu_timer::inject
