// Command line and environment of xpu_timer_supervisor. Pure parsing, used by
// the main thread once at startup. Every setting is one row of the table in
// options.cc (flag, environment variable, range, help); its default is the
// member initialiser below, which --help and the docs' table print.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/env_config.h"
#include "supervisor/analysis/straggler.h"
#include "supervisor/coordination/coordination_store.h"
#include "supervisor/incidents/crash_plugin_runner.h"
#include "supervisor/metrics/metrics_exporter.h"

namespace xpu_timer::supervisor {

enum class OnHang { kKeep, kKill };

struct Options {
  int port = 18888;  // 0: let the kernel pick a free port
  // The port came from --port or XPU_TIMER_BASEPORT: the supervisor refuses
  // to start when it is busy. The default port falls back to a free one
  // instead (docs/usage.md "Running a job").
  bool port_given = false;
  std::string host = "127.0.0.1";
  double hang_timeout_s = 300.0;
  // The job is stalled when every rank lives with nothing in flight and
  // nothing issued or completed for stall_factor x hang_timeout_s
  // (docs/architecture.md "Hang detection"); 0: no stall detection.
  double stall_factor = 2.0;
  std::string dump_dir = "./xpu_timer_dump";
  OnHang on_hang = OnHang::kKeep;
  int poll_ms = 500;
  double kill_grace_s = 10.0;
  // After the job ended, /metrics keeps answering (xpu_timer_job_running 0)
  // this long, so that Prometheus sees the end before the target goes down
  // (docs/metrics.md "Alerts"). Only when /metrics was scraped during the job
  // and no signal asked the supervisor to stop; 0: exit at once.
  double metrics_linger_s = 30.0;
  // The sliding window of the straggler analysis (docs/usage.md "Slow ranks"),
  // whose default is the analysis's own.
  double slow_window_s = StragglerOptions{}.window_s;
  // A job spanning several nodes: every node's supervisor shares its ranks'
  // progress through this store (etcd://HOST:PORT) and decides hangs over
  // the whole job (docs/architecture.md "Jobs of several nodes"). "": this
  // node alone.
  std::string coordinator;
  // Names the job in the store: every node of one job must give the same.
  // Default: XPU_TIMER_JOB_ID, else TORCHELASTIC_RUN_ID, else torchrun's
  // --rdzv-id in the command (or PET_RDZV_ID, its variable), else "default"
  // (torchrun's own default id "none" counts as none).
  std::string job_id;
  bool job_id_found = false;  // false: job_id is the "default" fallback
  // --metrics-histograms rank: latency, NVTX and step histograms per rank
  // instead of per node (docs/metrics.md "Series budget").
  bool metrics_per_rank_histograms = false;
  // /metrics: the window of the rate gauges and how long an idle key stays
  // exported (docs/metrics.md), the exporter's own defaults.
  double metrics_window_s = MetricsConfig{}.window_s;
  double metrics_expiry_s = MetricsConfig{}.expiry_s;
  // How long an exit-hook plugin may run (docs/usage.md "Stacks and
  // crashes"), the plugin runner's own default.
  double plugin_timeout_s = PluginSettings{}.timeout_s;
  // The exit-hook plugins (comma-separated paths; "" none), their
  // interpreter and their host script ("": <bin>/../share/xpu_timer/).
  std::string exit_hook_plugins;
  std::string plugin_python = PluginSettings{}.python;
  std::string plugin_host;
  // The library preloaded into the ranks ("": <bin>/../lib/).
  std::string inject_lib;
  // etcd's user/password auth and TLS files (coordination_store.h). The
  // password from XPU_TIMER_ETCD_PASSWORD or a file, never the command line.
  StoreSecurity coordinator_security;
  std::vector<std::string> command;  // the job: argv[0] and its arguments
};

struct ParseResult {
  enum class Status { kOk, kHelp, kError };
  Status status = Status::kOk;
  Options options;
  std::string error;  // one line, for kError
};

// Reads an environment variable (common/env_config.h).
using EnvLookup = xpu_timer::EnvLookup;

// Each setting's environment variable (unset or empty: the default), then
// the command line overrides it. Accepts "--opt value" and "--opt=value"; the
// command follows "--" (or starts at the first argument that is not an
// option).
ParseResult parse_options(const std::vector<std::string>& args, const EnvLookup& env);

// One row of the settings table as POST /config uses it (live_config.h): the
// range GET /config shows, and the very parse and check of the command line.
struct SettingRange {
  bool choice = false;
  double min = 0, max = 0;    // a number's bounds, inclusive
  std::string first, second;  // a choice's two words
  std::string expects;        // in words: "a positive number of seconds", "'keep' or 'kill'"
};
// nullopt when no setting has `flag` ("--hang-timeout").
std::optional<SettingRange> setting_range(const std::string& flag);
// Sets the setting of `flag` from `text` exactly as the command line would;
// "" or the error, naming `source`: "<source> must be <expects>, got '<text>'".
std::string set_setting(const std::string& flag, const std::string& source, const std::string& text,
                        Options* o);

// "usage: xpu_timer_supervisor [--port P] ... -- COMMAND..."
std::string usage_line();

// The supervisor's first log line: the command, where it listens and dumps,
// the hang timeout and what is done on a hang.
std::string options_summary(const Options& o);
// What --help prints: the usage line, then every option with its meaning,
// default and environment variable, then the other variables read.
std::string help_text();
// The table of docs/usage.md "Supervisor settings" (markdown, one row per
// setting: flag, variable, default, value, meaning); options_docs_test
// checks that the docs hold exactly this.
std::string settings_markdown();

}  // namespace xpu_timer::supervisor
