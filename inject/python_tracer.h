// The C side of the Python probes (inject/python_probes.py): callables the
// interpreter calls like Python functions but made by this library with
// PyCFunction_NewEx, so that a garbage collection or a traced call runs no
// Python bytecode of ours and no ctypes call, only a C function:
//   - "gc": the gc.callbacks entry. Times each collection from its "start" to
//     its "stop" and counts it per generation with the objects it freed
//     (python_calls(), the page's `python` block) and as a host event;
//   - "begin", "end", "unwind": a traced call began (PY_START, a generator's
//     PY_RESUME or PY_THROW), returned or yielded (PY_RETURN, PY_YIELD), or
//     was unwound by an exception (PY_UNWIND). On Python >= 3.12 they are the
//     sys.monitoring callbacks of our tool; before, the wrapper of a traced
//     function calls them. Their first argument is the code object of the
//     call; calls are paired per thread (inject/traced_call_stack.h).
// A finished call of a traced function is a HostEvent::kPythonCall (its
// name's id, its depth), folded per name by the Poller and recorded in the
// flight recorder; a call of the DataLoader's __next__ that returned is a
// DataLoader wait instead (one that raised, such as StopIteration at an
// epoch's end, is no batch).
//
// The CPython C API is looked up in the process (dlsym), never linked; it
// is the stable part every version since 3.8 exports.
//
// Threads: every entry point, and every callable it makes, runs with the GIL
// held (ctypes.PyDLL, interpreter callbacks), which orders them; the traced
// codes table is also published with atomics for readers without a GIL.
//
// Environment: none of its own; XPU_TIMER_HOST_TRACING_FUNC and the built-in
// functions are resolved by python_probes.py (docs/usage.md "Python function
// tracing").
#pragma once

#include <cstdint>

namespace xpu_timer::inject {

// At most this many code objects are traced (each also needs a name of the
// range-name table, which holds proto::kMaxRanges).
constexpr int kMaxTracedCodes = 32;

// How often, at most, the GC callback calls the retry (python_probes.py's
// resolution of names not found yet), and only while it says some remain.
constexpr uint64_t kRetryIntervalNs = 1'000'000'000;

}  // namespace xpu_timer::inject
