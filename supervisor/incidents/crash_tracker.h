// The crashes of this node's ranks: reports sent by the ranks (fatal signal,
// uncaught Python exception) and deaths without a report, noticed when a
// registered rank's process is gone while its status page file is still
// there (a rank that exits normally removes it from its exit handler).
// Each crash: one log line in words, <dump-dir>/crash-rank<R>-<pid>.json,
// the `crash` object of GET /ranks, and the exit-hook plugins.
// A death that is not a failure of its own is `terminated`: a signal the
// supervisor sent (forwarding, --on-hang kill, clean-up), any death after the
// supervisor asked the job to end, a stop signal from the launcher (a job
// process that is no rank), or a death by SIGTERM/SIGKILL shortly after a
// crash. Those get no file and no plugin run, only one "terminated:" line per
// cause naming the root cause (docs/usage.md, "Crashes").
//
// A crash whose rank waits in its handler (SignalReport::awaits_release) is
// concluded once its Python stacks were read (crash_python_stacks.h) or the
// read failed; a death without a report is told apart as the OOM killer's by
// the OOM kill counters (oom_evidence.h).
//
// Threads: everything on the asio thread, except crash_json_by_rank()
// (HTTP threads), which takes the mutex.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "supervisor/incidents/crash_json.h"
#include "supervisor/incidents/crash_plugin_runner.h"
#include "supervisor/incidents/crash_python_stacks.h"
#include "supervisor/incidents/crash_record.h"
#include "supervisor/incidents/crash_symbolizer.h"
#include "supervisor/incidents/oom_evidence.h"
#include "supervisor/ranks/rank_registry.h"

namespace xpu_timer::supervisor {

class CrashTracker {
 public:
  // `dump_dir` "" writes no files; `plugins` may be null; without `io` no
  // Python stacks are read (a waiting rank is released at once).
  CrashTracker(std::string dump_dir, CrashPluginRunner* plugins,
               boost::asio::io_context* io = nullptr,
               CrashStackReader::CollectFn collect = stack::collect_stacks_in_child);
  ~CrashTracker();

  // `release`: the descriptor a waiting rank sent; closed once its Python
  // stacks were read (or at once when they are not read).
  void on_signal_report(SignalReport report, const std::vector<RankRecord>& records,
                        UniqueFd release = UniqueFd());
  // Waits for the Python stack reads still running and concludes their
  // crashes (the job ended; bounded by CrashStackReader::kReadTimeout).
  void finish_pending();
  void on_python_exception(PythonExceptionReport report, const std::vector<RankRecord>& records);
  // A rank's link closed (`closed`: its record; nullopt: no rank's). A rank
  // that dies without a report is a zombie only until its launcher reaps it,
  // often long before the next poll: its exit status is read now, waiting
  // at most kExitReadMs for the zombie (never for a rank whose exit handler
  // removed its page: a normal exit).
  void on_link_closed(const std::optional<RankRecord>& closed);
  static constexpr int kExitReadMs = 20;
  // A child of the supervisor ended (a rank is one when the launcher died
  // first, or when the job is the rank itself).
  void on_reaped(pid_t pid, int wait_status);
  // Concludes every registered rank whose process is gone. Call after the
  // rank sockets were drained, so a report sent before death is seen first.
  void check_deaths(const std::vector<RankRecord>& records);
  // The supervisor asked the job to end (`cause`: "stopped by SIGTERM
  // forwarded by the supervisor"): every death from now on is terminated.
  void on_job_stop(std::string cause);
  // The job's main process (a sender of tear-down signals even once gone).
  void set_job_pid(pid_t pid) { job_pid_ = pid; }
  // Logs the pending "terminated:" lines: at once with `force` (job end),
  // else once no rank was terminated for a few seconds (one line per stop).
  void flush_terminated(bool force);

  // Crashes and deaths concluded so far (asio thread): the supervisor dumps
  // the flight recorders when this grows.
  uint64_t incidents() const { return incidents_; }
  // The latest of them: its rank (-1 before the first) and what ended it
  // ("SIGSEGV at address 0x0 in memmove, from f (train.py:40)").
  int latest_crash_rank() const { return latest_crash_rank_; }
  const std::string& latest_crash_what() const { return latest_crash_what_; }

  // rank -> crash object of its latest process (HTTP threads).
  std::map<int, nlohmann::json> crash_json_by_rank() const;
  // pid -> "crashed" / "terminated" of the latest process of each rank (HTTP threads).
  std::map<pid_t, std::string> outcomes_by_pid() const;

 private:
  void add(CrashRecord record);
  void conclude_reads();  // asio thread: the reads that finished
  static void fill_page_state(const RankRecord* rec, CrashRecord* out);
  // Why `r` is a termination, "" when it is a crash. `launcher_sender`: the
  // signal came from a job process that is no rank.
  std::string termination_cause(const CrashRecord& r, bool launcher_sender) const;
  bool is_launcher(pid_t sender, const std::vector<RankRecord>& records) const;

  std::string dump_dir_;
  CrashPluginRunner* plugins_;
  PluginIdentity identity_;
  CrashSymbolizer symbolizer_;
  OomEvidence oom_;
  std::unique_ptr<CrashStackReader> reader_;  // null without an io_context
  std::map<uint64_t, CrashRecord> reading_;   // crashes whose Python stacks are being read
  uint64_t next_read_ = 1;
  std::set<pid_t> concluded_;     // reported, or seen ending normally
  uint64_t incidents_ = 0;
  int latest_crash_rank_ = -1;
  std::string latest_crash_what_;
  std::map<pid_t, int> reaped_;   // wait statuses of children we reaped
  pid_t job_pid_ = 0;
  std::string stop_cause_;        // set once the supervisor asked the job to end
  std::string root_cause_;        // "rank 1's crash (SIGSEGV)" of the first crash
  double root_cause_time_s_ = 0;
  std::map<std::string, std::set<int>> pending_terminated_;  // cause -> ranks
  double last_terminated_s_ = 0;
  mutable std::mutex mutex_;
  std::map<int, CrashRecord> by_rank_;
};

// Exit status of a zombie from /proc/PID/stat (field 52), if still readable.
bool zombie_exit_status(pid_t pid, int* wait_status);
// The last kernel log line naming `pid` (OOM killer), "" when /dev/kmsg is
// unreadable (dmesg_restrict) or has none.
std::string kernel_line_about(pid_t pid);

}  // namespace xpu_timer::supervisor
