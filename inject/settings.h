// The injected library's settings: one table (settings.cc) of the
// environment variables it reads, each with its kind, range, default and
// meaning; the reading, the messages about bad values and docs/usage.md's
// table all come from it. Every part of the library reads settings(), never
// the environment.
//
// When: once, by a constructor when the library is loaded: before main and
// before any thread of the program exists when it is preloaded (before
// dlopen returns when it is opened later), so the environment the process
// started with; a variable the program sets later is not seen. After that
// the settings are only read: any thread, signal handlers included.
//
// A bad value never stops the program this library lives in: the setting
// keeps its default, and one line naming the variable and what it takes is
// kept, to be logged when the process becomes a rank (its first hooked
// call: report_setting_problems); bash, torchrun and the other processes
// that merely load the library say nothing. An unset or empty variable
// means the default, as for the supervisor's settings (the one text setting
// where empty means something else says so).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/recorder_ring.h"

namespace xpu_timer::inject {

// Defaults are the member initialisers, written nowhere else: the docs'
// table and the messages print them from a default-constructed value. Texts
// point to string literals or into the storage the reader copied them to,
// never into the environment (a later setenv cannot change them).
struct InjectSettings {
  bool disable = false;  // XPU_TIMER_DISABLE
  bool debug = false;    // XPU_TIMER_DEBUG_MODE
  // Set by the supervisor for the job: its socket, the run directory of the
  // status pages and rings, its pid (0: none).
  const char* socket = "";
  const char* run_dir = "";
  int64_t supervisor_pid = 0;
  double sample_per_sec = 10;  // timings per (operation, shape) per second; 0: every call
  int64_t recorder_size = recorder::kDefaultCapacity;  // records; 0: no recorder
  int64_t crash_wait_ms = 5000;
  const char* crash_dir = "";  // "": the working directory
  double poll_interval_ms = 1;
  bool call_sites = true;
  const char* call_site_skip = "/torch/,/deepspeed/comm/";
  const char* nvtx_domains = "";
  const char* step_range = "";  // "": steps from the optimizer hook
  bool python_probes = true;
  const char* dataloader_iter = "torch.utils.data.dataloader:_BaseDataLoaderIter";
  const char* optimizer_hook = "torch.optim.optimizer:register_optimizer_step_post_hook";
  int64_t python_monitoring_tool = 4;
  bool name_threads = true;
  const char* host_tracing_func = "";
};

// The process's settings, read when the library was loaded (defaults
// before that).
const InjectSettings& settings();

// Logs the lines about bad values found when the settings were read, one
// warning each. Called once, when the process starts as a rank.
void report_setting_problems();

// ---- the reader, apart from the process (tests) ----

// Where the reader copies text values: a caller's fixed buffer, so that
// reading allocates nothing. The process's holds kTextStoreBytes for all
// text settings together; a value that does not fit is refused.
constexpr size_t kTextStoreBytes = 16384;
struct TextStore {
  char* data;
  size_t size;
  size_t used = 0;
};

// The lines about bad values: one per setting at most. Every member has a
// constant initialiser, as in InjectSettings, so that the process's copies
// are constant-initialised: no static initialiser of the library, which
// may run after the reader's constructor, resets them.
struct SettingProblems {
  static constexpr int kMaxLines = 32;
  static constexpr size_t kLineBytes = 256;
  int count = 0;
  char lines[kMaxLines][kLineBytes] = {};
};

// Reads every setting of the table through `env` (nullptr: unset) into
// *out, which starts as InjectSettings{}. No allocation, no lock.
using EnvGetter = const char* (*)(const char* name);
void read_settings(EnvGetter env, InjectSettings* out, TextStore* store, SettingProblems* problems);

// The table of docs/usage.md "Environment" (markdown: variable, default,
// value, meaning); settings_docs_test checks that the docs hold exactly this.
std::string settings_markdown();

}  // namespace xpu_timer::inject
