// Wires the supervisor's components together (docs/architecture.md "The
// supervisor"): the run dir and rank socket (ranks/), the job's launch and
// control (job/), the poll loop that samples the ranks and runs the analysis
// (analysis/), incidents (incidents/: hangs, crashes, dumps), the other nodes
// (coordination/), /metrics (metrics/) and HTTP (http/). run() returns how the
// job ended.
//
// Threads: the caller's thread runs the asio io_context (signals, rank
// socket, poll timer, kill timers, and every event a component posts to the
// EventInbox: handle()); the HTTP server has its own threads and
// reads shared state through the thread-safe parts named in supervisor.cc's
// HTTP handlers.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "supervisor/analysis/collective_check.h"
#include "supervisor/analysis/hang_detector.h"
#include "supervisor/analysis/hang_report_json.h"
#include "supervisor/job/exit_status.h"
#include "supervisor/job/job_environment.h"
#include "supervisor/options.h"
#include "supervisor/ranks/rank_registry.h"
#include "supervisor/ranks/ring_feed.h"
#include "supervisor/supervisor_events.h"

namespace xpu_timer::supervisor {

class CollectiveMonitor;
class LinkTransferMonitor;
class SlowRankMonitor;
struct StackDumpReport;
class CrashPluginRunner;
class CrashTracker;
class HangIncident;
struct HangFollowUp;
class HttpServer;
class IncidentDumps;
class JobController;
class JobView;
class LiveConfig;
class MetricsExporter;
class MetricsLinger;
class MismatchIncident;
class RankLinkServer;
class RunDir;

class Supervisor {
 public:
  explicit Supervisor(Options options);
  ~Supervisor();

  // Before run(): opens --dump-dir and binds the HTTP port. False with one
  // line in `error` when either is unusable; the job must then not start (a
  // hang would leave nothing to read, or no /hang to ask). A port the user
  // gave (--port, XPU_TIMER_BASEPORT) is refused when busy; the default one
  // falls back to a free port with a warning, and supervisor.port says which.
  bool prepare(std::string* error);
  // Launches the job and serves until it has ended and its leftovers are
  // gone. Returns the job's end (exec failure: exit code 126/127).
  JobExit run();

 private:
  // Steps of run(), in order.
  void start_coordinator();
  // The run dir and the rank socket; *watch stays empty when they cannot
  // be had (the job then runs unwatched).
  void start_watching(RunDir* run_dir, WatchSettings* watch);
  void serve_http();

  void schedule_poll();
  // The rings read between polls when a job fills them faster than the poll
  // comes round (RingFeed::next_read_delay_ns); `records`: the registry as
  // of now, read once per round.
  void schedule_ring_read(const std::vector<RankRecord>& records);
  // Reads every rank's ring once (to the collective check and the slow-rank
  // analysis) and reports the mismatches the records complete.
  void read_rings(const std::vector<RankRecord>& records);
  void poll();
  // Asio thread: every event the components post (supervisor_events.h), one
  // at a time in the order posted.
  void handle(SupervisorEvent event);
  // What handle() does with some of them.
  // Asio thread: a stack dump ended (a hang's, or one asked over HTTP).
  void on_stacks_done(const std::shared_ptr<const StackDumpReport>& report);
  // Asio thread: what the hang incident returned it wants done.
  void follow_up(const HangFollowUp& f);
  // Asio thread: another node asked every node to dump (job_view.h).
  void on_remote_dump_request(const std::string& reason, int from_node);
  // The job ended: take the last crash reports, conclude the ranks that died
  // without one, let the plugins finish (bounded by their timeout) and
  // /metrics linger (--metrics-linger), stop.
  void finish_after_job(const JobExit& exit);
  void stop_when_done();
  // HTTP threads.
  std::shared_ptr<const HangReport> published_report() const;
  HangDocumentParts hang_document_parts() const;  // any thread
  HangDocumentParts latest_hang_parts() const;    // with the latest dumps
  std::string hang_json() const;
  nlohmann::json ranks_now() const;
  std::string ranks_json_text() const;
  std::string metrics_text() const;

  Options options_;
  std::string dump_dir_;  // empty when it could not be created
  boost::asio::io_context io_;
  EventInbox inbox_;  // the components' events, to handle() on the asio thread
  boost::asio::steady_timer poll_timer_;
  boost::asio::steady_timer ring_timer_;
  RankRegistry registry_;
  HangDetector detector_;
  std::unique_ptr<proto::StatusSnapshot> poll_scratch_;
  std::unique_ptr<CrashPluginRunner> plugins_;
  std::unique_ptr<CrashTracker> crashes_;
  std::unique_ptr<RankLinkServer> link_server_;
  std::unique_ptr<JobController> job_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<LiveConfig> live_config_;   // GET/POST /config (HTTP threads, applied on asio)
  std::unique_ptr<MetricsExporter> metrics_;  // thread-safe; used by HTTP threads
  std::atomic<bool> job_running_{true};       // xpu_timer_job_running (HTTP threads read it)
  mutable std::atomic<bool> scraped_while_running_{false};  // set by /metrics (HTTP threads)

  mutable std::mutex report_mutex_;
  std::shared_ptr<const HangReport> published_report_;

  // Asio thread only, at the job's end: a signal asked us to stop (no
  // linger), and what the exit still waits for.
  bool stopped_by_signal_ = false;
  JobExit result_;  // how the job ended (JobEnded), what run() returns
  bool plugins_idle_ = false;
  bool linger_over_ = false;
  std::unique_ptr<MetricsLinger> linger_;
  // The other nodes of the job (--coordinator); null: this node alone. Its
  // thread posts dump requests to io_: destroyed before io_.
  std::unique_ptr<JobView> job_view_;
  // The one reader of the ranks' rings (asio thread), handing their records
  // to the three monitors below.
  RingFeed rings_;
  // Collective consistency (asio thread; published() for HTTP).
  std::unique_ptr<CollectiveMonitor> collectives_;
  std::unique_ptr<SlowRankMonitor> slow_;  // poll() on the asio thread; HTTP reads published()
  std::unique_ptr<LinkTransferMonitor> links_;  // the same
  // Asio thread: the hang's log, dumps, hang.json and --on-hang kill.
  std::unique_ptr<HangIncident> hang_;
  // Asio thread: a mismatch's log, dumps, mismatch.json and odd ranks' places.
  std::unique_ptr<MismatchIncident> mismatches_;
  // Last member: destroyed first, so its threads end before what they use.
  std::unique_ptr<IncidentDumps> dumps_;
};

}  // namespace xpu_timer::supervisor
