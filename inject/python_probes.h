// The Python probes (inject/python_probes.py): garbage collections, the
// DataLoader's waits and the traced functions of a rank's interpreter,
// counted into the status page's `python` block and range table. The script
// runs once, on the thread that chains the Python excepthook
// (inject/crash_python_hook.h), after it; what runs at each collection or
// traced call is C (inject/python_tracer.h).
//
// Settings (inject/settings.h, passed to the script as arguments: it reads
// no variable): XPU_TIMER_PYTHON_PROBES=0 turns the probes off;
// XPU_TIMER_HOST_TRACING_FUNC names functions to trace besides the built-in
// ones (docs/usage.md "Python function tracing"); XPU_TIMER_DATALOADER_ITER
// the iterator whose __next__ is timed; XPU_TIMER_OPTIMIZER_HOOK the step
// hook's registrar; XPU_TIMER_PYTHON_MONITORING_TOOL the sys.monitoring tool
// id used on Python >= 3.12; XPU_TIMER_STEP_RANGE (set: steps are NVTX
// ranges, not optimizer steps); XPU_TIMER_NAME_THREADS=0 leaves OS thread
// names alone (inject/os_thread_names.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "inject/runtime_counters.h"

namespace xpu_timer::inject {

// The process's counters. Process-wide rather than in RuntimeState: the
// probes start while the runtime is still initialising, and may report
// before it is published.
PythonCallCounters& python_calls();

// A garbage collection of `generation` that took `pause_ns` and freed
// `collected` objects; a DataLoader __next__ that returned a batch after
// `wait_ns`. Counted, and a host event each. Any thread.
void note_gc(int generation, uint64_t pause_ns, uint64_t collected);
void note_loader_wait(uint64_t wait_ns);

// The call that runs the probes, appended to the embedded script; empty when
// the probes are off. Fills `out` (NUL-terminated); false if it does not fit.
bool python_probes_source(char* out, size_t size);

}  // namespace xpu_timer::inject
