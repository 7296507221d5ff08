// The controls the injected library exports for benchmarks besides the hooks: pausing
// timing in a running process, so that a benchmark can compare rounds with and
// without xpu-timer interleaved in one process (bench/gpu/overhead.py calls it
// through ctypes). Paused hooks call through exactly like an unwatched process.
#include <cstdio>

#include "common/clock.h"
#include "inject/bench_parts.h"
#include "inject/call_sites.h"
#include "inject/hook_export.h"
#include "inject/runtime.h"

// Returns 0 when the state changed or already was as asked, -1 when timing is
// not active in this process (no supervisor, pass-through, not started yet).
XPU_TIMER_HOOK int xpu_timer_bench_set_paused(int paused) {
  return xpu_timer::inject::set_paused(paused != 0) ? 0 : -1;
}

// Switches one part of the library (inject/bench_parts.h) on (on != 0) or
// off in this process; 0, or -1 for an unknown part's name.
XPU_TIMER_HOOK int xpu_timer_bench_set_part(const char* name, int on) {
  return xpu_timer::inject::set_bench_part(name, on != 0) ? 0 : -1;
}

// Reads the calling thread's call site (inject/call_sites.h) `n` times, as
// a collective's hook does, and stores the nanoseconds all of them took in
// *ns: bench/call_site_cost.py calls it through ctypes.CDLL (the GIL
// released, as around a collective) from Python frames of a chosen depth.
// Returns the site's index, -1 when there is none.
XPU_TIMER_HOOK int xpu_timer_bench_call_site(long n, unsigned long long* ns) {
  const uint64_t t0 = xpu_timer::monotonic_ns();
  int id = -1;
  for (long i = 0; i < n; ++i) id = xpu_timer::inject::call_sites().capture();
  if (ns != nullptr) *ns = xpu_timer::monotonic_ns() - t0;
  return id;
}

// Call site `id` as "function<TAB>file<TAB>line" in `buf` (NUL-terminated,
// cut to `size`); returns its length, -1 when there is no such site. For
// the call sites' tests and benchmark, to check what capture() found.
XPU_TIMER_HOOK int xpu_timer_bench_call_site_text(int id, char* buf, unsigned long size) {
  const xpu_timer::inject::CallSites& sites = xpu_timer::inject::call_sites();
  if (id < 0 || static_cast<uint32_t>(id) >= sites.size() || buf == nullptr || size == 0) return -1;
  const xpu_timer::recorder::SiteEntry& e = sites.entry(static_cast<uint32_t>(id));
  return std::snprintf(buf, size, "%s\t%s\t%d", e.function, e.file, e.line);
}
