// The one control the injected library exports besides the hooks: pausing
// timing in a running process, so that a benchmark can compare rounds with and
// without xpu-timer interleaved in one process (bench/gpu/overhead.py calls it
// through ctypes). Paused hooks call through exactly like an unwatched process.
#include "inject/hook_export.h"
#include "inject/runtime.h"

// Returns 0 when the state changed or already was as asked, -1 when timing is
// not active in this process (no supervisor, pass-through, not started yet).
XPU_TIMER_HOOK int xpu_timer_bench_set_paused(int paused) {
  return xpu_timer::inject::set_paused(paused != 0) ? 0 : -1;
}
