// The crashes of this node's ranks: reports sent by the ranks (fatal signal,
// uncaught Python exception) and deaths without a report, noticed when a
// registered rank's process is gone while its status page file is still
// there (a rank that exits normally removes it from its exit handler).
// Each crash: one log line in words, <dump-dir>/crash-rank<R>-<pid>.json,
// the `crash` object of GET /ranks, and the exit-hook plugins.
//
// Threads: everything on the asio thread, except crash_json_by_rank()
// (HTTP threads), which takes the mutex.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "supervisor/crash_json.h"
#include "supervisor/crash_plugin_runner.h"
#include "supervisor/crash_record.h"
#include "supervisor/crash_symbolizer.h"
#include "supervisor/rank_registry.h"

namespace xpu_timer::supervisor {

class CrashTracker {
 public:
  // `dump_dir` "" writes no files; `plugins` may be null.
  CrashTracker(std::string dump_dir, CrashPluginRunner* plugins);

  void on_signal_report(SignalReport report, const std::vector<RankRecord>& records);
  void on_python_exception(PythonExceptionReport report, const std::vector<RankRecord>& records);
  // A child of the supervisor ended (a rank is one when the launcher died
  // first, or when the job is the rank itself).
  void on_reaped(pid_t pid, int wait_status);
  // Concludes every registered rank whose process is gone. Call after the
  // rank sockets were drained, so a report sent before death is seen first.
  void check_deaths(const std::vector<RankRecord>& records);

  // rank -> crash object of its latest process (HTTP threads).
  std::map<int, nlohmann::json> crash_json_by_rank() const;

 private:
  void add(CrashRecord record);
  static void fill_page_state(const RankRecord* rec, CrashRecord* out);

  std::string dump_dir_;
  CrashPluginRunner* plugins_;
  PluginIdentity identity_;
  CrashSymbolizer symbolizer_;
  std::set<pid_t> concluded_;     // reported, or seen ending normally
  std::map<pid_t, int> reaped_;   // wait statuses of children we reaped
  mutable std::mutex mutex_;
  std::map<int, CrashRecord> by_rank_;
};

// Exit status of a zombie from /proc/PID/stat (field 52), if still readable.
bool zombie_exit_status(pid_t pid, int* wait_status);
// The last kernel log line naming `pid` (OOM killer), "" when /dev/kmsg is
// unreadable (dmesg_restrict) or has none.
std::string kernel_line_about(pid_t pid);

}  // namespace xpu_timer::supervisor
