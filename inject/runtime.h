// Process-wide state of the injected library and its life cycle: lazy start
// at the first hooked call, pass-through modes, fork and exit handling.
//
// Threads: init runs on the first user thread that calls a hook; hooks on
// other threads wait for it (bounded, 2 s) so that no NCCL call escapes the
// per-communicator sequence numbers. mode() is read by every hook.
// RuntimeState is created once, never freed (hooks and the Poller may still
// touch it while the process exits), and reached through runtime_state().
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/env_config.h"
#include "common/recorder_ring.h"
#include "common/status_page.h"
#include "inject/bounded_queue.h"
#include "inject/event_pool.h"
#include "inject/nvtx_ranges.h"
#include "inject/op_record.h"
#include "inject/runtime_counters.h"
#include "inject/sample_gate.h"
#include "inject/supervisor_link.h"

namespace xpu_timer::inject {

class Poller;

enum class Mode : int {
  kUninit = 0,        // no hook ran yet in this process
  kInitializing = 1,  // one thread is initialising; other hooks wait for it
  kActive = 2,        // hooks time calls
  kPassThrough = 3,   // for the rest of the process: hooks only call through
  kPaused = 4,        // hooks call through until resumed (A/B benchmarks); the poller runs on
};

// Counters the hooks bump (rarely: only on the unusual paths).
struct HookCounters {
  std::atomic<uint64_t> dropped_queue_full{0};
  std::atomic<uint64_t> skipped_capture{0};
  std::atomic<uint64_t> hook_errors{0};
  std::atomic<uint64_t> ranges_dropped{0};  // NVTX ranges: queue full, too deep, too many open
  // The hooks' own time, sampled (proto::SelfCost): one call in
  // kHookSampleEvery of each thread is timed, rarely enough that these
  // shared atomics cost nothing measurable.
  static constexpr uint64_t kHookSampleEvery = 64;
  std::atomic<uint64_t> hook_sampled_calls{0};
  std::atomic<uint64_t> hook_sampled_ns{0};
};

struct RuntimeState {
  static constexpr size_t kQueueCapacity = 8192;

  RankIdentity identity;
  pid_t pid = 0;
  BoundedQueue<OpRecord, 64> queue{kQueueCapacity};
  // Finished NVTX ranges and steps (inject/nvtx_ranges.h), for the Poller.
  BoundedQueue<RangeRecord> ranges{kQueueCapacity};
  EventPools pools;
  HookCounters counters;
  RuntimeCallCounters runtime_calls;  // inject/hooks_cudart.cc
  // The status page (common/status_page.h): written by the Poller only; set
  // before the state is published, never null after.
  std::unique_ptr<proto::StatusPageFile> page;
  SupervisorLink link;
  // The flight recorder (common/recorder_ring.h): written by the Poller only.
  recorder::RingWriter ring;
  Poller* poller = nullptr;
  // Which calls get a full timing; XPU_TIMER_SAMPLE_PER_SEC per (op, shape).
  SampleGate* gate = nullptr;
};

// The state; nullptr before a successful initialisation.
RuntimeState* runtime_state();

namespace runtime_detail {
// What the inline fast paths below read (defined in runtime.cc).
extern std::atomic<int> g_mode;
extern std::atomic<RuntimeState*> g_state;
// Hooks entered and not yet left on this thread. initial-exec and `__thread`
// (no initialiser to run): one thread-pointer-relative access, no
// __tls_get_addr call. The library is preloaded, so its TLS is static.
extern __thread int t_hook_depth __attribute__((tls_model("initial-exec")));
// active_runtime() when the mode is not kActive: first initialisation,
// waiting for another thread's, or nullptr.
RuntimeState* active_runtime_slow(int mode);
}  // namespace runtime_detail

// Inline: the launch hooks (thousands a step) read it.
inline Mode mode() {
  return static_cast<Mode>(runtime_detail::g_mode.load(std::memory_order_acquire));
}

// Called at the top of every hook (outside re-entrancy): initialises on the
// first call. Returns the state when calls are to be timed, else nullptr.
// Inline: every hooked call (thousands a step) asks it.
inline RuntimeState* active_runtime() {
  const int m = runtime_detail::g_mode.load(std::memory_order_acquire);
  if (m == static_cast<int>(Mode::kActive)) {
    return runtime_detail::g_state.load(std::memory_order_relaxed);
  }
  return runtime_detail::active_runtime_slow(m);
}

// True while the calling thread is inside a hook of ours.
inline bool inside_hook() { return runtime_detail::t_hook_depth > 0; }

// Turns timing off for the rest of the process (a CUDA error of ours, the
// supervisor went away). Logs `why` once. Any thread.
void switch_to_pass_through(const char* why);

// Pauses (true) or resumes (false) timing of an active runtime; returns false
// when the runtime is not active or paused. While paused no sequence numbers
// advance, so every rank must pause and resume between the same collectives.
bool set_paused(bool paused);

// Re-entrancy guard: a hook called from inside a hook (our own CUDA calls,
// a library calling another hooked entry point) passes straight through.
class HookScope {
 public:
  HookScope() : nested_(runtime_detail::t_hook_depth++ > 0) {}
  ~HookScope() { --runtime_detail::t_hook_depth; }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;
  bool nested() const { return nested_; }

 private:
  bool nested_;
};

}  // namespace xpu_timer::inject
