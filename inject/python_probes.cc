#include "inject/python_probes.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "common/status_page_layout.h"
#include "inject/comm_registry.h"
#include "inject/hook_export.h"
#include "inject/nvtx_ranges.h"
#include "inject/os_thread_names.h"
#include "inject/python_probes_source.h"  // generated from python_probes.py
#include "inject/python_script.h"
#include "inject/settings.h"

namespace xpu_timer::inject {

PythonCallCounters& python_calls() {
  static PythonCallCounters counters;  // trivially destructible atomics: usable during exit
  return counters;
}

bool python_probes_source(char* out, size_t size) {
  const InjectSettings& config = settings();
  if (!config.python_probes) {
    if (size > 0) out[0] = '\0';
    return true;
  }
  // Every setting of the script comes from here: it reads no variable.
  ScriptBuffer script(out, size);
  return script.add(
             "%s\n"
             "try:\n"
             "    _xpu_r = _xpu_timer_probes('%s', %d, '%s', %s, %s, ",
             kPythonProbesSource, config.dataloader_iter,
             static_cast<int>(config.python_monitoring_tool), config.optimizer_hook,
             config.step_range[0] == '\0' ? "True" : "False",
             config.name_threads ? "True" : "False") &&
         script.add_bytes(config.host_tracing_func) &&
         script.add(
             ")\n"
             "except Exception as _xpu_e:\n"
             "    _xpu_r = 'failed: %%r' %% (_xpu_e,)\n"
             "import ctypes as _xpu_c\n"
             "_xpu_f = _xpu_c.PyDLL(None).xpu_timer_python_probes\n"
             "_xpu_f.argtypes = [_xpu_c.c_char_p]\n"
             "_xpu_f(str(_xpu_r).encode('utf-8', 'replace'))\n");
}

void note_gc(int generation, uint64_t pause_ns, uint64_t collected) {
  const int g = generation < 0 ? 0 : (generation > 2 ? 2 : generation);
  auto& c = python_calls();
  c.gc_collections[g].fetch_add(1, std::memory_order_relaxed);
  c.gc_pause_ns[g].fetch_add(pause_ns, std::memory_order_relaxed);
  c.gc_collected[g].fetch_add(collected, std::memory_order_relaxed);
  RangeRecord r{};
  r.end_ns = monotonic_ns();
  r.start_ns = r.end_ns > pause_ns ? r.end_ns - pause_ns : 0;
  r.tid = this_thread_id();
  r.depth = static_cast<int16_t>(g);
  r.kind = HostEvent::kGcPause;
  r.value = collected;
  emit_host_event(r);
}

void note_loader_wait(uint64_t wait_ns) {
  python_calls().loader_batches.fetch_add(1, std::memory_order_relaxed);
  python_calls().loader_wait_ns.fetch_add(wait_ns, std::memory_order_relaxed);
  RangeRecord r{};
  r.end_ns = monotonic_ns();
  r.start_ns = r.end_ns > wait_ns ? r.end_ns - wait_ns : 0;
  r.tid = this_thread_id();
  r.kind = HostEvent::kLoaderWait;
  emit_host_event(r);
}

}  // namespace xpu_timer::inject

using xpu_timer::inject::python_calls;

// Called by python_probes.py (ctypes, GIL held): what the probes could
// install, "gc,optimizer,dataloader:sys.monitoring,functions:3", or why not.
XPU_TIMER_HOOK void xpu_timer_python_probes(const char* result) {
  if (result == nullptr) return;
  uint32_t probes = 0;
  if (std::strncmp(result, "gc", 2) == 0) probes |= xpu_timer::proto::kPythonProbeGc;
  if (std::strstr(result, "dataloader:") != nullptr) {
    probes |= xpu_timer::proto::kPythonProbeDataLoader;
  }
  if (std::strstr(result, "optimizer") != nullptr)
    probes |= xpu_timer::proto::kPythonProbeOptimizer;
  python_calls().probes.store(probes, std::memory_order_relaxed);
  XPU_TIMER_LOG_DEBUG("Python probes: %.300s", result);
}

// Called by python_probes.py (ctypes, GIL held) once per threading.Thread:
// its OS name becomes its Python name (encoded and cut to 15 bytes there,
// as CPython 3.14 does) unless it named itself (os_thread_names.h). 1 named,
// 0 left alone, -1 failed: the first failure is logged (debug), the rest
// are silent, as naming threads is a convenience.
XPU_TIMER_HOOK int xpu_timer_python_name_thread(int tid, const char* name) {
  if (name == nullptr) return -1;
  switch (xpu_timer::inject::name_os_thread(tid, name)) {
    case xpu_timer::inject::OsThreadNaming::kNamed:
      return 1;
    case xpu_timer::inject::OsThreadNaming::kOwnName:
      return 0;
    case xpu_timer::inject::OsThreadNaming::kFailed:
      break;
  }
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    XPU_TIMER_LOG_DEBUG(
        "cannot name thread %d '%.15s' (/proc/self/task/%d/comm: %s): Python "
        "threads keep their OS names",
        tid, name, tid, std::strerror(errno));
  }
  return -1;
}

// One line of the probes for the rank's log at debug level (a probe that
// failed once and is silent from then on).
XPU_TIMER_HOOK void xpu_timer_python_debug(const char* line) {
  if (line != nullptr) XPU_TIMER_LOG_DEBUG("%.900s", line);
}

// Called by python_probes.py (ctypes, GIL held): how many communicators the
// process registered so far; the probes look for names when it grows.
XPU_TIMER_HOOK uint32_t xpu_timer_python_comm_count() {
  return xpu_timer::inject::comm_registry().size();
}

// Called by python_probes.py (ctypes, GIL held): `comm` (an ncclComm_t, as
// torch's ProcessGroupNCCL._comm_ptr() gives it) belongs to the process
// group named `name`. 1 named, 0 not (unknown, or named by its constructor).
XPU_TIMER_HOOK int xpu_timer_python_name_comm(uint64_t comm, const char* name) {
  if (comm == 0 || name == nullptr) return 0;
  const bool named =
      xpu_timer::inject::comm_registry().name_later(reinterpret_cast<const void*>(comm), name);
  if (named)
    XPU_TIMER_LOG_DEBUG("communicator %#llx: named \"%.40s\" by its process group",
                        static_cast<unsigned long long>(comm), name);
  return named ? 1 : 0;
}
