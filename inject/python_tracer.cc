#include "inject/python_tracer.h"

#include <dlfcn.h>
#include <sys/types.h>

#include <atomic>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "inject/hook_export.h"
#include "inject/nvtx_ranges.h"
#include "inject/python_probes.h"
#include "inject/runtime.h"
#include "inject/traced_call_stack.h"

namespace xpu_timer::inject {
namespace {

// CPython's PyMethodDef, as every version lays it out (stable ABI).
struct MethodDef {
  const char* name;
  void* meth;
  int flags;
  const char* doc;
};
constexpr int kMethFastcall = 0x0080;  // METH_FASTCALL: (self, args, nargs), no tuple
using Fastcall = void* (*)(void* self, void* const* args, ssize_t nargs);

// The C API we call, found in the process once (the interpreter exports it).
struct CApi {
  void* (*cfunction_new_ex)(MethodDef*, void*, void*);
  int (*unicode_compare_ascii)(void*, const char*);
  void* (*unicode_intern)(const char*);
  void* (*dict_get_item)(void*, void*);  // borrowed; never sets an error
  long (*long_as_long)(void*);
  void* (*err_occurred)();
  void (*err_clear)();
  void (*inc_ref)(void*);
  void (*dec_ref)(void*);
  void* (*call_object)(void*, void*);
  int (*is_true)(void*);
  void* none;            // &_Py_NoneStruct
  void* generation_key;  // interned "generation", "collected"
  void* collected_key;
};

template <typename F>
bool find(const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return *out != nullptr;
}

// Null when the process has no interpreter (or an unexpected one). Called
// with the GIL held the first time (the keys are Python objects).
const CApi* capi() {
  static const CApi* api = []() -> const CApi* {
    static CApi a;
    const bool ok = find("PyCFunction_NewEx", &a.cfunction_new_ex) &&
                    find("PyUnicode_CompareWithASCIIString", &a.unicode_compare_ascii) &&
                    find("PyUnicode_InternFromString", &a.unicode_intern) &&
                    find("PyDict_GetItem", &a.dict_get_item) &&
                    find("PyLong_AsLong", &a.long_as_long) &&
                    find("PyErr_Occurred", &a.err_occurred) && find("PyErr_Clear", &a.err_clear) &&
                    find("Py_IncRef", &a.inc_ref) && find("Py_DecRef", &a.dec_ref) &&
                    find("PyObject_CallObject", &a.call_object) &&
                    find("PyObject_IsTrue", &a.is_true) && find("_Py_NoneStruct", &a.none);
    if (!ok) return nullptr;
    a.generation_key = a.unicode_intern("generation");
    a.collected_key = a.unicode_intern("collected");
    if (a.generation_key == nullptr || a.collected_key == nullptr) {
      a.err_clear();
      return nullptr;
    }
    return &a;
  }();
  return api;
}

void* none() {
  const CApi* a = capi();
  a->inc_ref(a->none);
  return a->none;
}

// A traced code object: its name's id and whether it is the DataLoader's
// __next__. Entries are appended, never removed (python_probes.py keeps the
// code objects alive), and published by `g_ncodes`.
struct TracedCode {
  std::atomic<const void*> code{nullptr};
  uint16_t name_id = 0;
  bool loader = false;
};
TracedCode g_codes[kMaxTracedCodes];
std::atomic<int> g_ncodes{0};

const TracedCode* traced(const void* code) {
  const int n = g_ncodes.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (g_codes[i].code.load(std::memory_order_relaxed) == code) return &g_codes[i];
  }
  return nullptr;
}

thread_local TracedCallStack t_calls;

void count_dropped(uint32_t n) {
  if (n == 0 || mode() != Mode::kActive) return;
  if (RuntimeState* st = runtime_state()) {
    st->counters.ranges_dropped.fetch_add(n, std::memory_order_relaxed);
  }
}

void record_call(const TracedCode& c, const TracedCallStack::Call& call, bool returned) {
  const uint64_t now = monotonic_ns();
  const uint64_t duration = now > call.start_ns ? now - call.start_ns : 0;
  if (c.loader) {
    if (returned) note_loader_wait(duration);  // a batch; a raise is none
    return;
  }
  RangeRecord r{};
  r.start_ns = call.start_ns;
  r.end_ns = now;
  r.tid = this_thread_id();
  r.depth = static_cast<int16_t>(call.depth);
  r.name_id = c.name_id;
  r.kind = HostEvent::kPythonCall;
  emit_host_event(r);
}

void* on_begin(void*, void* const* args, ssize_t nargs) {
  if (nargs >= 1) {
    if (const TracedCode* c = traced(args[0])) t_calls.begin(c, monotonic_ns());
  }
  return none();
}

void end_call(void* const* args, ssize_t nargs, bool returned) {
  if (nargs < 1 || t_calls.empty()) return;  // PY_UNWIND of any frame lands here: be quick
  const TracedCode* c = traced(args[0]);
  if (c == nullptr) return;
  TracedCallStack::Call call;
  uint32_t discarded = 0;
  const bool ended = t_calls.end(c, &call, &discarded);
  count_dropped(discarded);
  if (ended) record_call(*c, call, returned);
}

void* on_end(void*, void* const* args, ssize_t nargs) {
  end_call(args, nargs, true);
  return none();
}

void* on_unwind(void*, void* const* args, ssize_t nargs) {
  end_call(args, nargs, false);
  return none();
}

// The retry python_probes.py gave (a strong reference), called from the GC
// callback while it says names remain unresolved.
void* g_retry = nullptr;
uint64_t g_last_retry_ns = 0;
bool g_in_retry = false;

void maybe_retry(uint64_t now_ns) {
  if (g_retry == nullptr || g_in_retry || now_ns - g_last_retry_ns < kRetryIntervalNs) return;
  const CApi* a = capi();
  g_last_retry_ns = now_ns;
  g_in_retry = true;  // the retry may allocate, collect and call traced code
  void* result = a->call_object(g_retry, nullptr);
  bool again = false;
  if (result != nullptr) {
    again = a->is_true(result) == 1;
    a->dec_ref(result);
  }
  if (a->err_occurred() != nullptr) a->err_clear();
  if (!again) {
    a->dec_ref(g_retry);
    g_retry = nullptr;
  }
  g_in_retry = false;
}

uint64_t g_gc_start_ns = 0;  // collections never overlap: the GIL, or the world stopped

long long_item(void* dict, void* key) {
  const CApi* a = capi();
  void* v = a->dict_get_item(dict, key);
  if (v == nullptr) return 0;
  const long n = a->long_as_long(v);
  if (n == -1 && a->err_occurred() != nullptr) {
    a->err_clear();
    return 0;
  }
  return n;
}

// gc.callbacks calls it with (phase, info): "start" or "stop", and a dict
// holding "generation" and, at the stop, "collected".
void* on_gc(void*, void* const* args, ssize_t nargs) {
  if (nargs < 2) return none();
  const CApi* a = capi();
  const uint64_t now = monotonic_ns();
  if (a->unicode_compare_ascii(args[0], "start") == 0) {
    g_gc_start_ns = now;
  } else if (g_gc_start_ns != 0) {
    const long generation = long_item(args[1], a->generation_key);
    const long collected = long_item(args[1], a->collected_key);
    note_gc(static_cast<int>(generation), now - g_gc_start_ns,
            collected > 0 ? static_cast<uint64_t>(collected) : 0);
    g_gc_start_ns = 0;
    maybe_retry(now);
  }
  if (a->err_occurred() != nullptr) a->err_clear();  // a phase that is not a str
  return none();
}

MethodDef g_defs[] = {
    {"xpu_timer_gc", reinterpret_cast<void*>(static_cast<Fastcall>(on_gc)), kMethFastcall, nullptr},
    {"xpu_timer_begin", reinterpret_cast<void*>(static_cast<Fastcall>(on_begin)), kMethFastcall,
     nullptr},
    {"xpu_timer_end", reinterpret_cast<void*>(static_cast<Fastcall>(on_end)), kMethFastcall,
     nullptr},
    {"xpu_timer_unwind", reinterpret_cast<void*>(static_cast<Fastcall>(on_unwind)), kMethFastcall,
     nullptr},
};

}  // namespace
}  // namespace xpu_timer::inject

using xpu_timer::inject::capi;

// The entry points python_probes.py calls through ctypes.PyDLL (GIL held).

// The callable named `which` ("gc", "begin", "end", "unwind"), made once
// and kept for the process: a borrowed reference (ctypes' py_object takes
// its own). Null (ctypes raises) if unknown or not in a Python process.
XPU_TIMER_HOOK void* xpu_timer_python_builtin(const char* which) {
  using namespace xpu_timer::inject;
  static void* made[sizeof(g_defs) / sizeof(g_defs[0])] = {};
  if (which == nullptr || capi() == nullptr) return nullptr;
  for (size_t i = 0; i < sizeof(g_defs) / sizeof(g_defs[0]); ++i) {
    if (std::strcmp(g_defs[i].name + sizeof("xpu_timer_") - 1, which) != 0) continue;
    if (made[i] == nullptr) made[i] = capi()->cfunction_new_ex(&g_defs[i], nullptr, nullptr);
    return made[i];
  }
  return nullptr;
}

// Traces `code` (kept alive by the caller) under `name`; `loader`: it is the
// DataLoader's __next__. 0: traced; 1: traced already; -1: no room (the
// codes table or the range-name table is full).
XPU_TIMER_HOOK int xpu_timer_python_trace(const void* code, const char* name, int loader) {
  using namespace xpu_timer::inject;
  if (code == nullptr || name == nullptr) return -1;
  if (traced(code) != nullptr) return 1;
  const int n = g_ncodes.load(std::memory_order_relaxed);
  if (n >= kMaxTracedCodes) return -1;
  uint16_t id = 0;
  if (loader == 0) {
    id =
        range_names().intern(name, std::strlen(name), xpu_timer::proto::RangeKind::kPythonFunction);
    if (id == RangeNames::kOther) return -1;
  }
  g_codes[n].name_id = id;
  g_codes[n].loader = loader != 0;
  g_codes[n].code.store(code, std::memory_order_relaxed);
  g_ncodes.store(n + 1, std::memory_order_release);
  return 0;
}

// The callable the GC callback calls (at most once per kRetryIntervalNs)
// while it returns true; None or null: none.
XPU_TIMER_HOOK void xpu_timer_python_set_retry(void* fn) {
  using namespace xpu_timer::inject;
  const CApi* a = capi();
  if (a == nullptr) return;
  if (g_retry != nullptr) a->dec_ref(g_retry);
  g_retry = fn != nullptr && fn != a->none ? fn : nullptr;
  if (g_retry != nullptr) a->inc_ref(g_retry);
  g_last_retry_ns = xpu_timer::monotonic_ns();
}

// One line of the probes for the rank's log (names that do not resolve).
XPU_TIMER_HOOK void xpu_timer_python_warn(const char* line) {
  if (line != nullptr) XPU_TIMER_LOG_WARN("%.900s", line);
}
