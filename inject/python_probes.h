// The Python probes (inject/python_probes.py): garbage collections and the
// DataLoader's waits of a rank's interpreter, counted into the status page's
// `python` block. The script runs once, on the thread that chains the
// Python excepthook (inject/crash_python_hook.h), after it; it reports
// through the three C functions below, which the library exports for it.
//
// Environment: XPU_TIMER_PYTHON_PROBES=0 turns the probes off;
// XPU_TIMER_DATALOADER_ITER ("module:Class", default
// torch.utils.data.dataloader:_BaseDataLoaderIter) names the iterator whose
// __next__ is timed; XPU_TIMER_PYTHON_MONITORING_TOOL (default 4) the
// sys.monitoring tool id used on Python >= 3.12.
#pragma once

#include <cstddef>

#include "inject/runtime_counters.h"

namespace xpu_timer::inject {

// The process's counters. Process-wide rather than in RuntimeState: the
// probes start while the runtime is still initialising, and may report
// before it is published.
PythonCallCounters& python_calls();

// The call that runs the probes, appended to the embedded script; empty when
// the probes are off. Fills `out` (NUL-terminated); false if it does not fit.
bool python_probes_source(char* out, size_t size);

}  // namespace xpu_timer::inject
