#include "supervisor/supervisor.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <map>

#include "supervisor/dump_files.h"
#include "supervisor/hang_report_json.h"
#include "supervisor/http_server.h"
#include "supervisor/job_controller.h"
#include "supervisor/job_environment.h"
#include "supervisor/job_launcher.h"
#include "supervisor/log_tee.h"
#include "supervisor/metrics_exporter.h"
#include "supervisor/op_json.h"
#include "supervisor/page_read_guard.h"
#include "supervisor/process_table.h"
#include "supervisor/rank_link_server.h"
#include "supervisor/rank_sampler.h"
#include "supervisor/ranks_json.h"
#include "supervisor/run_dir.h"

namespace xpu_timer::supervisor {
namespace {

// Signals the job controller handles; blocked from before the fork until its
// handlers exist, so that an early Ctrl-C is forwarded, not fatal to us.
sigset_t controlled_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
    sigaddset(&set, sig);
  }
  return set;
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    out += a;
  }
  return out;
}

}  // namespace

Supervisor::Supervisor(Options options)
    : options_(std::move(options)),
      poll_timer_(io_),
      detector_(options_.hang_timeout_s),
      poll_scratch_(std::make_unique<proto::StatusPage>()),
      published_report_(std::make_shared<HangReport>()) {}

Supervisor::~Supervisor() {
  if (http_) http_->stop();
}

JobExit Supervisor::run() {
  install_page_read_guard();
  // Writes to a closed HTTP client must fail with EPIPE, not kill us; the job
  // gets back whatever SIGPIPE disposition we inherited.
  struct sigaction ignore_pipe {};
  ignore_pipe.sa_handler = SIG_IGN;
  sigemptyset(&ignore_pipe.sa_mask);
  struct sigaction inherited_pipe {};
  sigaction(SIGPIPE, &ignore_pipe, &inherited_pipe);

  std::string error;
  if (make_directories(options_.dump_dir, &error)) {
    dump_dir_ = options_.dump_dir;
    ::unlink((dump_dir_ + "/hang.json").c_str());  // they describe an earlier run
    ::unlink((dump_dir_ + "/supervisor.port").c_str());
    if (!open_log_copy(dump_dir_ + "/supervisor.log")) {
      SUP_LOG_WARN("cannot write %s/supervisor.log: %s", dump_dir_.c_str(), strerror(errno));
    }
  } else {
    SUP_LOG_WARN("dump directory unusable, no dump files will be written: %s", error.c_str());
  }
  SUP_LOG_INFO("supervising '%s': port %d on %s, dump dir %s, hang timeout %.3g s, on hang %s",
               command_text(options_.command).c_str(), options_.port, options_.host.c_str(),
               options_.dump_dir.c_str(), options_.hang_timeout_s,
               options_.on_hang == OnHang::kKill ? "kill" : "keep");

  // Watching needs the library, a run dir and the socket; without any of
  // them the job still runs, unwatched.
  WatchSettings watch;
  RunDir run_dir;
  const std::string inject_lib = default_inject_lib_path();
  if (::access(inject_lib.c_str(), R_OK) != 0) {
    SUP_LOG_WARN(
        "injected library %s not found (%s): running the job UNWATCHED (no metrics, no "
        "hang detection); set XPU_TIMER_INJECT_LIB to its path",
        inject_lib.c_str(), strerror(errno));
  } else {
    run_dir = RunDir::create(&error);
    if (run_dir.path().empty()) {
      SUP_LOG_WARN("%s: running the job UNWATCHED", error.c_str());
    } else {
      link_server_ = std::make_unique<RankLinkServer>(
          io_, [this](uint64_t id, const RankRegistration& reg) { return on_register(id, reg); },
          [this](uint64_t id) { registry_.on_disconnect(id); });
      if (!link_server_->listen(run_dir.socket_path(), &error)) {
        SUP_LOG_WARN("%s: running the job UNWATCHED", error.c_str());
        link_server_.reset();
      } else {
        watch.inject_lib = inject_lib;
        watch.socket_path = run_dir.socket_path();
        watch.run_dir = run_dir.path();
      }
    }
  }

  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    SUP_LOG_WARN("prctl(PR_SET_CHILD_SUBREAPER) failed: %s; orphans of the job may escape",
                 strerror(errno));
  }

  const sigset_t controlled = controlled_signals();
  sigset_t previous_mask;
  pthread_sigmask(SIG_BLOCK, &controlled, &previous_mask);

  LaunchSpec spec;
  spec.argv = options_.command;
  spec.env = build_job_environment(current_environment(), watch);
  spec.restore_signals.emplace_back(SIGPIPE, inherited_pipe);
  const LaunchResult launched = launch_job(spec);
  if (launched.pid <= 0) {
    pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
    SUP_LOG_ERROR("cannot run the job: %s", launched.error.c_str());
    return JobExit{false,
                   launched.exec_errno != 0 ? exit_code_for_exec_errno(launched.exec_errno) : 127};
  }
  SUP_LOG_INFO("job started: pid %d%s", launched.pid,
               watch.inject_lib.empty() ? " (unwatched)" : "");

  JobExit result;
  job_ = std::make_unique<JobController>(io_, launched.pid, options_.kill_grace_s,
                                         [this, &result](const JobExit& e) {
                                           result = e;
                                           io_.stop();
                                         });
  job_->start();
  pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);

  // After the fork, so that no listening socket can leak into the job.
  http_ = std::make_unique<HttpServer>(HttpHandlers{[this] { return hang_json(); },
                                                    [this] { return ranks_json_text(); },
                                                    [this] { return metrics_text(); }});
  if (http_->start(options_.host, options_.port, &error)) {
    SUP_LOG_INFO("listening on http://%s:%d", options_.host.c_str(), http_->port());
    if (!dump_dir_.empty() &&
        !write_file_atomically(dump_dir_ + "/supervisor.port", std::to_string(http_->port()) + "\n",
                               &error)) {
      SUP_LOG_WARN("%s", error.c_str());
    }
  } else {
    SUP_LOG_ERROR("HTTP disabled: %s; the job and hang detection go on", error.c_str());
  }

  schedule_poll();
  io_.run();

  poll_timer_.cancel();
  http_->stop();
  if (link_server_) link_server_->close();
  return result;
}

bool Supervisor::on_register(uint64_t connection_id, const RankRegistration& reg) {
  std::string error;
  auto mapping = StatusPageMapping::open(reg.status_path, reg.pid, reg.rank, &error);
  if (!mapping) {
    SUP_LOG_WARN("rank %d (pid %d): registration refused: %s", reg.rank, reg.pid, error.c_str());
    return false;
  }
  RankRecord record;
  record.reg = reg;
  if (auto st = read_proc_stat(reg.pid)) record.start_time = st->start_time;
  record.page = std::move(mapping);
  record.registered_ns = monotonic_now_ns();
  record.connection_id = connection_id;
  record.connected = true;
  const pid_t replaced = registry_.add(std::move(record));
  if (replaced != 0 && replaced != reg.pid) {
    SUP_LOG_INFO("rank %d re-registered by pid %d (was pid %d)", reg.rank, reg.pid, replaced);
  } else {
    SUP_LOG_INFO("rank %d registered: pid %d on %s, local rank %d of %d, node %d, world %d",
                 reg.rank, reg.pid, reg.host.c_str(), reg.local_rank, reg.local_world_size,
                 reg.group_rank, reg.world_size);
  }
  return true;
}

void Supervisor::schedule_poll() {
  poll_timer_.expires_after(std::chrono::milliseconds(options_.poll_ms));
  poll_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    poll();
    schedule_poll();
  });
}

void Supervisor::poll() {
  try {
    const std::vector<RankRecord> records = registry_.snapshot();
    if (records.empty() && !detector_.report().hung) return;
    const Snapshot snap = take_snapshot(records, poll_scratch_.get());
    const HangEvent event = detector_.update(snap);
    {
      std::lock_guard<std::mutex> lock(report_mutex_);
      published_report_ = std::make_shared<const HangReport>(detector_.report());
    }
    if (event != HangEvent::kNone) on_hang_event(event, detector_.report());
  } catch (const std::exception& e) {
    SUP_LOG_ERROR("poll failed: %s", e.what());
  }
}

void Supervisor::on_hang_event(HangEvent event, const HangReport& report) {
  if (event == HangEvent::kCleared) {
    SUP_LOG_INFO("hang cleared");
    return;  // hang.json keeps the last hang for the post-mortem
  }
  SUP_LOG_WARN("hang: %s", report.summary.c_str());
  if (!dump_dir_.empty()) {
    std::string error;
    if (!write_file_atomically(dump_dir_ + "/hang.json",
                               json_text(hang_report_json(report), 2) + "\n", &error)) {
      SUP_LOG_WARN("%s", error.c_str());
    }
  }
  if (event == HangEvent::kDetected && options_.on_hang == OnHang::kKill && job_) {
    job_->terminate(SIGTERM, "hang detected and --on-hang kill");
  }
}

std::string Supervisor::hang_json() const {
  std::shared_ptr<const HangReport> report;
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    report = published_report_;
  }
  HangReport shown = *report;
  shown.timeout_s = options_.hang_timeout_s;
  return json_text(hang_report_json(shown), 2);
}

std::string Supervisor::ranks_json_text() const {
  std::shared_ptr<const HangReport> report;
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    report = published_report_;
  }
  auto scratch = std::make_unique<proto::StatusPage>();
  const Snapshot snap = take_snapshot(registry_.snapshot(), scratch.get());
  return json_text(ranks_json(snap, *report), 2);
}

std::string Supervisor::metrics_text() const {
  std::shared_ptr<const HangReport> report;
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    report = published_report_;
  }
  std::map<int, RankState> states;
  for (const RankVerdict& v : report->ranks) states[v.rank] = v.state;

  auto scratch = std::make_unique<proto::StatusPage>();
  MetricsWriter writer;
  const uint64_t now = monotonic_now_ns();
  for (const RankRecord& rec : registry_.snapshot()) {
    RankMetricsInput in;
    in.rank = rec.reg.rank;
    in.local_rank = rec.reg.local_rank;
    in.host = rec.reg.host;
    in.up = process_alive(rec.reg.pid, rec.start_time);
    auto it = states.find(rec.reg.rank);
    in.stuck = it != states.end() && it->second == RankState::kStuck;
    uint64_t beat = 0;
    if (rec.page && rec.page->heartbeat(&beat)) {
      beat = std::max(beat, rec.registered_ns);
      in.heartbeat_age_s = now > beat ? static_cast<double>(now - beat) / 1e9 : 0.0;
    }
    in.page = rec.page && rec.page->read(scratch.get()) ? scratch.get() : nullptr;
    writer.add_rank(in);
  }
  return writer.finish(report->hung);
}

}  // namespace xpu_timer::supervisor
