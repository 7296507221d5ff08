// Runs the exit-hook plugins (XPU_TIMER_EXIT_HOOK_PLUGIN=/a.py,/b.py) for a
// crash: one child `python3 plugin_host.py PLUGIN` per plugin and report, in
// its own process group, with the report JSON on stdin (a memfd) and its
// output logged line by line. A plugin that raises, is missing or hangs
// (killed after XPU_TIMER_PLUGIN_TIMEOUT, default 30 s) costs log lines and
// nothing else: the job's exit status never depends on a plugin.
//
// Threads: asio thread only. The JobController reaps every child of the
// supervisor (waitpid(-1)), so a host's end is seen as EOF on its output
// pipe, and it is killed through a pidfd, which stays valid after reaping.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace xpu_timer::supervisor {

struct PluginSettings {
  std::vector<std::string> plugins;  // paths, in order
  std::string python = "python3";    // XPU_TIMER_PLUGIN_PYTHON
  std::string host_script;           // <exe dir>/../share/xpu_timer/plugin_host.py
  double timeout_s = 30;             // XPU_TIMER_PLUGIN_TIMEOUT's default (supervisor/options.h)
};
// The plugins (comma-separated paths), their interpreter and their host
// script ("": <exe dir>/../share/xpu_timer/plugin_host.py), as the
// supervisor's settings give them (supervisor/options.h); the timeout too is
// the caller's to set.
PluginSettings plugin_settings_from(const std::string& plugins, const std::string& python,
                                    const std::string& host);
// One line naming the plugins, and a warning when their host script is not readable.
void log_plugin_settings(const PluginSettings& s);

class CrashPluginRunner {
 public:
  CrashPluginRunner(boost::asio::io_context& io, PluginSettings settings);
  ~CrashPluginRunner();
  CrashPluginRunner(const CrashPluginRunner&) = delete;
  CrashPluginRunner& operator=(const CrashPluginRunner&) = delete;

  bool enabled() const { return !settings_.plugins.empty(); }
  // Starts every plugin on `input_json`; `what` names the crash in log lines.
  void run(const std::string& input_json, const std::string& what);
  // A running plugin host or a process of its group (the job's cleanup must
  // leave them alone: the interpreter may be a wrapper such as a pyenv shim).
  bool owns(pid_t pid) const;
  // Calls `done` once no plugin runs (at once when none does).
  void when_idle(std::function<void()> done);

 private:
  class Run;
  void finished(pid_t pid);

  boost::asio::io_context& io_;
  PluginSettings settings_;
  std::set<pid_t> pids_;
  std::function<void()> idle_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace xpu_timer::supervisor
