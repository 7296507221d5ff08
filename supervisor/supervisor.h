// Wires the supervisor together: run dir and rank socket, job launch, job
// controller (signals, reaping, exit status), registry, hang detection poll
// loop, HTTP server and dump files. run() returns how the job ended.
//
// Threads: the caller's thread runs the asio io_context (signals, rank
// socket, poll timer, kill timers); the HTTP server has its own threads and
// reaches shared state only through the registry (mutex) and the published
// hang report (mutex).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "supervisor/analysis/collective_check.h"
#include "supervisor/job/exit_status.h"
#include "supervisor/analysis/hang_detector.h"
#include "supervisor/analysis/job_fingerprints.h"
#include "supervisor/coordination/job_view.h"
#include "supervisor/options.h"
#include "supervisor/ranks/rank_registry.h"
#include "supervisor/incidents/timeline_dump.h"

namespace xpu_timer::supervisor {

class CrashPluginRunner;
class CrashTracker;
class HttpServer;
class JobController;
class MetricsExporter;
class RankLinkServer;
class StackDumper;
struct StackDumpReport;

class Supervisor {
 public:
  explicit Supervisor(Options options);
  ~Supervisor();

  // Launches the job and serves until it has ended and its leftovers are
  // gone. Returns the job's end (exec failure: exit code 126/127).
  JobExit run();

 private:
  bool on_register(uint64_t connection_id, const RankRegistration& reg);
  void poll();
  void schedule_poll();
  void on_hang_event(HangEvent event, const HangReport& report);
  // The job ended: take the last crash reports, conclude the ranks that died
  // without one, let the plugins finish (bounded by their timeout) and
  // /metrics linger (--metrics-linger), stop.
  void finish_after_job(const JobExit& exit, JobExit* result);
  void start_metrics_linger();
  void end_metrics_linger();
  void stop_when_done();
  std::string hang_json() const;
  std::string ranks_json_text() const;
  std::string metrics_text() const;
  // Stacks (stack_dump.h). Asio thread, except dump_stacks_request (HTTP).
  void start_hang_stacks();
  void on_stacks_done(std::shared_ptr<const StackDumpReport> report);
  void write_hang_file();
  int dump_stacks_request(std::string* json_body);
  // Flight recorders (timeline_dump.h): any thread; `hang_json` may be "".
  TimelineDumpResult dump_timelines_now(const std::string& reason, const std::string& hang_json);
  int dump_timeline_request(std::string* json_body);
  // Asio thread: dumps the rings once per new hang and per new crash.
  void dump_timelines_for_hang();
  void dump_timelines_for_crashes();
  // Asio thread: feeds the ranks' new flight-recorder records to the
  // collective checker and reports what it finds (collective_check.h).
  void check_collectives(const std::vector<RankRecord>& records);
  void on_mismatch(Mismatch m);
  // Asio thread: another node asked every node to dump (job_view.h).
  void on_remote_dump_request(const std::string& reason, int from_node);
  // Asio thread, a job of several nodes (job_fingerprints.h): offers this
  // node's fingerprints, compares the ones read from its peer nodes, and
  // reports a mismatch that some node published.
  void exchange_fingerprints(int node);
  void on_job_mismatch(Mismatch m, int from_node);

  Options options_;
  std::string dump_dir_;  // empty when it could not be created
  boost::asio::io_context io_;
  boost::asio::steady_timer poll_timer_;
  RankRegistry registry_;
  HangDetector detector_;
  std::unique_ptr<proto::StatusSnapshot> poll_scratch_;
  std::unique_ptr<CrashPluginRunner> plugins_;
  std::unique_ptr<CrashTracker> crashes_;
  std::unique_ptr<RankLinkServer> link_server_;
  std::unique_ptr<JobController> job_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<MetricsExporter> metrics_;  // thread-safe; used by HTTP threads
  std::atomic<bool> job_running_{true};       // xpu_timer_job_running (HTTP threads read it)
  mutable std::atomic<bool> scraped_while_running_{false};  // set by /metrics (HTTP threads)

  mutable std::mutex report_mutex_;
  std::shared_ptr<const HangReport> published_report_;

  // Asio thread only: the hang hang.json describes, the stack dump it points
  // to, the stuck operations (rank/pid/launch time) whose stacks were taken,
  // and what waits for a running dump to end (--on-hang kill, a queued hang
  // dump). After the kill for a hang no further hang dump starts.
  std::optional<HangReport> hang_in_file_;
  std::shared_ptr<const StackDumpReport> hang_stacks_;
  std::vector<std::string> hangs_collected_;
  bool hang_stacks_queued_ = false;
  bool kill_after_stacks_ = false;
  bool killed_for_hang_ = false;
  // Asio thread only: stuck operations whose rings were dumped, the crash
  // count at the last crash dump, and the hang's timeline folder.
  std::vector<std::string> hang_timelines_dumped_;
  uint64_t crash_incidents_dumped_ = 0;
  std::string hang_timeline_dir_;
  // Collective consistency. Asio thread: the checker and, per rank, the
  // next ring position to read. Published (report_mutex_): what GET /hang,
  // /metrics and mismatch.json show.
  struct RingCursor {
    pid_t pid = 0;
    uint64_t next = 0;
    int retries = 0;  // times the same torn position was retried
  };
  CollectiveChecker checker_;
  std::map<int, RingCursor> ring_cursors_;
  std::vector<Mismatch> mismatches_;            // the most recent kMaxMismatchesKept
  std::vector<nlohmann::json> mismatch_files_;  // the same with their dump folders
  uint64_t mismatch_total_ = 0;
  std::atomic<uint64_t> collectives_checked_{0};
  std::set<int> mismatched_ranks_;
  static constexpr size_t kMaxMismatchesKept = 64;
  // Asio thread only: every collective reported (comm, seq), from this node
  // or job-wide, and the job-wide comparison's state (job_fingerprints.h).
  std::set<std::pair<uint64_t, uint64_t>> reported_collectives_;
  FingerprintLog fingerprints_;
  std::map<uint64_t, uint64_t> job_reported_after_;    // comm -> highest seq reported
  std::map<uint64_t, uint64_t> job_compared_through_;  // comm -> highest seq compared
  std::set<uint64_t> job_unaligned_;
  uint64_t fingerprints_offered_ns_ = 0;
  std::map<uint64_t, uint64_t> fingerprints_published_;  // comm -> highest seq offered
  nlohmann::json job_fingerprint_status_;  // report_mutex_: what GET /hang shows of it
  // Asio thread only, at the job's end: a signal asked us to stop (no
  // linger), and what the exit still waits for.
  bool stopped_by_signal_ = false;
  bool plugins_idle_ = false;
  bool linger_over_ = false;
  std::unique_ptr<boost::asio::steady_timer> linger_timer_;
  std::unique_ptr<boost::asio::signal_set> linger_signals_;
  // The other nodes of the job (--coordinator); null: this node alone. Its
  // thread posts dump requests to io_: destroyed before io_.
  std::unique_ptr<JobView> job_view_;
  // Last member: destroyed first, so its threads end before what they use.
  std::unique_ptr<StackDumper> stacks_;
};

}  // namespace xpu_timer::supervisor
