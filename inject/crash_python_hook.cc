#include "inject/crash_python_hook.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cstring>

#include "common/log.h"
#include "common/rank_messages.h"
#include "inject/crash_excepthook_source.h"  // generated from crash_excepthook.py
#include "inject/python_probes.h"
#include "inject/python_probes_source.h"  // generated from python_probes.py
#include "inject/python_script.h"
#include "inject/settings.h"

namespace xpu_timer::inject {
namespace {

// The few CPython C-API entry points we need, looked up in the process (the
// interpreter exports them); we never link against libpython.
struct PythonApi {
  int (*is_initialized)();
  int (*gil_ensure)();  // PyGILState_STATE is an int-sized enum
  void (*gil_release)(int);
  void* (*dict_new)();
  int (*dict_set_item_string)(void*, const char*, void*);
  void* (*eval_get_builtins)();
  void* (*run_string_flags)(const char*, int, void*, void*, void*);
  void (*dec_ref)(void*);
  void (*err_clear)();
};
constexpr int kPyFileInput = 257;  // Py_file_input

template <typename F>
bool find(const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return *out != nullptr;
}

bool load_python_api(PythonApi* api) {
  return find("Py_IsInitialized", &api->is_initialized) &&
         find("PyGILState_Ensure", &api->gil_ensure) &&
         find("PyGILState_Release", &api->gil_release) && find("PyDict_New", &api->dict_new) &&
         find("PyDict_SetItemString", &api->dict_set_item_string) &&
         find("PyEval_GetBuiltins", &api->eval_get_builtins) &&
         find("PyRun_StringFlags", &api->run_string_flags) && find("Py_DecRef", &api->dec_ref) &&
         find("PyErr_Clear", &api->err_clear);
}

PythonApi g_api;
// The scripts and their calls, whose text values (paths, a list of
// functions) may take four characters a byte (python_script.h).
char g_source[sizeof(kCrashExcepthookSource) + 256 + 4 * kTextStoreBytes];
char g_probes[sizeof(kPythonProbesSource) + 1024 + 4 * kTextStoreBytes];  // empty: probes off

// Runs `source` in a private namespace (__main__ stays untouched); the GIL is held.
bool run_script(const char* source) {
  void* globals = g_api.dict_new();
  bool ok = false;
  if (globals != nullptr &&
      g_api.dict_set_item_string(globals, "__builtins__", g_api.eval_get_builtins()) == 0) {
    void* result = g_api.run_string_flags(source, kPyFileInput, globals, globals, nullptr);
    ok = result != nullptr;
    if (result != nullptr) g_api.dec_ref(result);
  }
  if (!ok) g_api.err_clear();
  if (globals != nullptr) g_api.dec_ref(globals);
  return ok;
}

void* install_thread(void*) {
  pthread_setname_np(pthread_self(), "xpu_timer_pyhook");
  // The rank called CUDA, so the interpreter is normally up already.
  const timespec pause{0, 50 * 1000 * 1000};
  for (int i = 0; i < 200 && g_api.is_initialized() == 0; ++i) nanosleep(&pause, nullptr);
  if (g_api.is_initialized() == 0) return nullptr;
  const int gil = g_api.gil_ensure();
  const bool ok = run_script(g_source);
  // The probes report what they installed themselves (python_probes.h).
  const bool probes_ok = g_probes[0] == '\0' || run_script(g_probes);
  g_api.gil_release(gil);
  if (!probes_ok) XPU_TIMER_LOG_WARN("the Python probes (gc, DataLoader) could not be installed");
  if (ok) {
    XPU_TIMER_LOG_DEBUG("sys.excepthook chained: uncaught Python exceptions are reported");
  } else {
    XPU_TIMER_LOG_WARN("could not chain sys.excepthook: Python exceptions are not reported");
  }
  return nullptr;
}

}  // namespace

void start_python_excepthook_install() {
  if (!load_python_api(&g_api)) return;  // not a Python process
  // The script knows no protocol constant and reads no setting: it gets
  // them all here.
  ScriptBuffer script(g_source, sizeof(g_source));
  if (!(script.add("%s\n_xpu_timer_install('%s', %u, %u, %u, %u, ", kCrashExcepthookSource,
                   proto::kMsgHeaderStructFormat, proto::kMessageMagic, proto::kMessageVersion,
                   static_cast<unsigned>(proto::MsgType::kPythonException),
                   proto::kMaxMessageBytes) &&
        script.add_bytes(settings().socket) && script.add(", ") &&
        script.add_bytes(settings().crash_dir) && script.add(")\n"))) {
    XPU_TIMER_LOG_WARN("the excepthook's script does not fit: Python exceptions are not reported");
    return;
  }
  if (!python_probes_source(g_probes, sizeof(g_probes))) {
    XPU_TIMER_LOG_WARN("the Python probes' script does not fit: probes off");
    g_probes[0] = '\0';
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t tid;
  const int rc = pthread_create(&tid, nullptr, &install_thread, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    XPU_TIMER_LOG_WARN("pthread_create failed: %s; Python exceptions are not reported",
                       std::strerror(rc));
    return;
  }
  pthread_detach(tid);
}

}  // namespace xpu_timer::inject
