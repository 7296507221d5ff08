#include "supervisor/supervisor.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <map>

#include "common/mapped_read_guard.h"
#include "supervisor/incidents/crash_plugin_runner.h"
#include "supervisor/incidents/crash_tracker.h"
#include "supervisor/incidents/dump_files.h"
#include "supervisor/analysis/hang_report_json.h"
#include "supervisor/http/http_server.h"
#include "supervisor/job/job_controller.h"
#include "supervisor/job/job_environment.h"
#include "supervisor/job/job_launcher.h"
#include "supervisor/log_tee.h"
#include "supervisor/metrics/metrics_exporter.h"
#include "supervisor/analysis/op_json.h"
#include "supervisor/job/process_table.h"
#include "supervisor/ranks/rank_link_server.h"
#include "supervisor/ranks/rank_sampler.h"
#include "supervisor/analysis/ranks_json.h"
#include "supervisor/job/run_dir.h"
#include "supervisor/incidents/stack_dump.h"

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

// The registered ranks whose process still lives (the same process that
// registered: pid reuse is checked).
std::vector<StackTarget> stack_targets(const std::vector<RankRecord>& records) {
  std::vector<StackTarget> out;
  for (const RankRecord& rec : records) {
    if (!process_alive(rec.reg.pid, rec.start_time)) continue;
    out.push_back(StackTarget{rec.reg.rank, rec.reg.world_size, rec.reg.pid});
  }
  return out;
}

// "rank/pid/launch_ns" of each stuck rank's pending operation: the same
// operation keeps its key while it stays stuck. (A hang with no stuck
// operation is keyed by its sentence.)
std::vector<std::string> stuck_operation_keys(const HangReport& report) {
  std::vector<std::string> keys;
  for (const RankVerdict& v : report.ranks) {
    if (v.state != RankState::kStuck || !v.has_op) continue;
    keys.push_back(std::to_string(v.rank) + "/" + std::to_string(v.pid) + "/" +
                   std::to_string(v.op.launch_ns));
  }
  if (keys.empty()) keys.push_back(hang_sentence(report, /*with_durations=*/false));
  return keys;
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    out += a;
  }
  return out;
}

// A dead supervisor's entry disappears this long after its last keep-alive.
constexpr int kCoordinatorLeaseS = 10;
constexpr int kCoordinatorPublishMs = 1000;
// How often a node of several offers its collectives' fingerprints and
// compares its peers' (job_fingerprints.h): at most 2048 numbers per
// communicator in each, so up to ~400 collectives a second per communicator
// are all compared. A disagreement waits for it on this node three periods
// and two seconds (then it is reported with this node's members only).
constexpr uint64_t kFingerprintPeriodNs = 5ull * 1000 * 1000 * 1000;
constexpr uint64_t kCrossNodeSettleNs = 3 * kFingerprintPeriodNs + 2ull * 1000 * 1000 * 1000;

}  // namespace

Supervisor::Supervisor(Options options)
    : options_(std::move(options)),
      poll_timer_(io_),
      detector_(options_.hang_timeout_s),
      poll_scratch_(std::make_unique<proto::StatusSnapshot>()),
      published_report_(std::make_shared<HangReport>()) {
  metrics_ = std::make_unique<MetricsExporter>(MetricsConfig::from_env(options_.command));
}

Supervisor::~Supervisor() {
  if (http_) http_->stop();
}

JobExit Supervisor::run() {
  common::install_mapped_read_guard();  // before any page is attached
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
  if (!dump_dir_.empty()) {
    StackDumpSettings stack_settings;
    stack_settings.dump_dir = dump_dir_;
    stacks_ = std::make_unique<StackDumper>(std::move(stack_settings));
  }
  SUP_LOG_INFO("supervising '%s': port %d on %s, dump dir %s, hang timeout %.3g s, on hang %s",
               command_text(options_.command).c_str(), options_.port, options_.host.c_str(),
               options_.dump_dir.c_str(), options_.hang_timeout_s,
               options_.on_hang == OnHang::kKill ? "kill" : "keep");

  PluginSettings plugin_settings = plugin_settings_from_env();
  if (!plugin_settings.plugins.empty()) {
    std::string names;
    for (const std::string& p : plugin_settings.plugins) names += (names.empty() ? "" : ", ") + p;
    SUP_LOG_INFO("exit-hook plugins: %s (host %s, timeout %.0f s)", names.c_str(),
                 plugin_settings.host_script.c_str(), plugin_settings.timeout_s);
    if (::access(plugin_settings.host_script.c_str(), R_OK) != 0) {
      SUP_LOG_WARN(
          "plugin host %s is not readable (%s): plugins will fail; set "
          "XPU_TIMER_PLUGIN_HOST",
          plugin_settings.host_script.c_str(), strerror(errno));
    }
  }
  if (!options_.coordinator.empty()) {
    std::string why;
    auto store = open_coordination_store(options_.coordinator, kCoordinatorLeaseS, &why);
    if (store == nullptr) {
      SUP_LOG_WARN("coordinator %s: %s; deciding over this node's ranks alone",
                   options_.coordinator.c_str(), why.c_str());
    } else {
      SUP_LOG_INFO("coordinator %s, job id '%s'", options_.coordinator.c_str(),
                   options_.job_id.c_str());
      job_view_ = std::make_unique<JobView>(
          std::move(store), options_.coordinator, options_.job_id, kCoordinatorPublishMs,
          [this](const std::string& reason, int from_node) {
            boost::asio::post(
                io_, [this, reason, from_node] { on_remote_dump_request(reason, from_node); });
          },
          [this](Mismatch m, int from_node) {
            boost::asio::post(io_, [this, m = std::move(m), from_node]() mutable {
              on_job_mismatch(std::move(m), from_node);
            });
          });
      checker_.set_cross_node_settle(kCrossNodeSettleNs);
    }
  }
  plugins_ = std::make_unique<CrashPluginRunner>(io_, std::move(plugin_settings));
  crashes_ = std::make_unique<CrashTracker>(dump_dir_, plugins_.get());

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
      link_server_->set_crash_callbacks(
          [this](SignalReport r) {
            crashes_->on_signal_report(std::move(r), registry_.snapshot());
          },
          [this](PythonExceptionReport r) {
            crashes_->on_python_exception(std::move(r), registry_.snapshot());
          });
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
  job_ = std::make_unique<JobController>(
      io_, launched.pid, options_.kill_grace_s,
      [this, &result](const JobExit& e) { finish_after_job(e, &result); });
  job_->set_spared([this](pid_t pid) { return plugins_->owns(pid); });
  job_->set_on_reaped([this](pid_t pid, int status) { crashes_->on_reaped(pid, status); });
  job_->set_on_terminate([this](int sig) {
    stopped_by_signal_ = !killed_for_hang_;
    crashes_->on_job_stop(killed_for_hang_
                              ? "killed by the supervisor after a hang (--on-hang kill)"
                              : "stopped by " + signal_name(sig) + " forwarded by the supervisor");
  });
  crashes_->set_job_pid(launched.pid);
  job_->start();
  pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);

  // After the fork, so that no listening socket can leak into the job.
  http_ = std::make_unique<HttpServer>(
      HttpHandlers{[this] { return hang_json(); }, [this] { return ranks_json_text(); },
                   [this] { return metrics_text(); },
                   [this](std::string* body) { return dump_stacks_request(body); },
                   [this](std::string* body) { return dump_timeline_request(body); }});
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
  auto mapping = proto::StatusPageFile::attach(reg.status_path, reg.pid, reg.rank, &error);
  if (!mapping) {
    SUP_LOG_WARN("rank %d (pid %d): registration refused: %s", reg.rank, reg.pid, error.c_str());
    return false;
  }
  RankRecord record;
  record.reg = reg;
  if (auto st = read_proc_stat(reg.pid)) record.start_time = st->start_time;
  record.page = std::move(mapping);
  // The flight recorder is optional (XPU_TIMER_RECORDER_SIZE=0, or its file
  // could not be made): the rank is watched without it.
  const size_t slash = reg.status_path.rfind('/');
  const std::string ring_file = recorder::ring_path(
      slash == std::string::npos ? "." : reg.status_path.substr(0, slash), reg.rank, reg.pid);
  if (::access(ring_file.c_str(), F_OK) == 0) {
    std::string ring_error;
    record.ring = recorder::RingReader::attach(ring_file, reg.pid, reg.rank, &ring_error);
    if (!record.ring) {
      SUP_LOG_WARN("rank %d: flight recorder not readable: %s", reg.rank, ring_error.c_str());
    }
  }
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

void Supervisor::finish_after_job(const JobExit& exit, JobExit* result) {
  *result = exit;
  job_running_ = false;
  try {
    if (link_server_) link_server_->drain();
    crashes_->check_deaths(registry_.snapshot());
    crashes_->flush_terminated(/*force=*/true);
    dump_timelines_for_crashes();
  } catch (const std::exception& e) {
    SUP_LOG_ERROR("crash bookkeeping at exit failed: %s", e.what());
  }
  start_metrics_linger();
  // Plugins end by themselves or by their timeout; the job's status is kept.
  plugins_->when_idle([this] {
    plugins_idle_ = true;
    stop_when_done();
  });
}

// XpuTimerSupervisorDown fires when the target goes down while its last
// scrape said xpu_timer_job_running 1. So that a job's end raises nothing,
// /metrics keeps answering (job_running 0) for --metrics-linger, long enough
// for one more scrape; a signal ends that wait. Nobody scraped during the
// job, or somebody asked us to stop: no wait (docs/metrics.md "Alerts").
void Supervisor::start_metrics_linger() {
  const double linger_s = options_.metrics_linger_s;
  if (linger_s <= 0 || !scraped_while_running_.load() || stopped_by_signal_) {
    linger_over_ = true;
    return;
  }
  SUP_LOG_INFO(
      "/metrics answers xpu_timer_job_running 0 for %.3g s more, so that Prometheus sees "
      "the job's end (--metrics-linger; a signal ends the wait)",
      linger_s);
  linger_timer_ = std::make_unique<boost::asio::steady_timer>(io_);
  linger_timer_->expires_after(std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(linger_s)));
  linger_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (!ec) end_metrics_linger();
  });
  linger_signals_ = std::make_unique<boost::asio::signal_set>(io_);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    boost::system::error_code ec;
    linger_signals_->add(sig, ec);
    if (ec) SUP_LOG_WARN("cannot watch signal %d: %s", sig, ec.message().c_str());
  }
  linger_signals_->async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    SUP_LOG_INFO("%s received: exiting without waiting for the last scrape",
                 signal_name(sig).c_str());
    end_metrics_linger();
  });
}

void Supervisor::end_metrics_linger() {
  linger_over_ = true;
  if (linger_timer_) linger_timer_->cancel();
  if (linger_signals_) {
    boost::system::error_code ignored;
    linger_signals_->cancel(ignored);
  }
  stop_when_done();
}

void Supervisor::stop_when_done() {
  if (plugins_idle_ && linger_over_) io_.stop();
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
    if (link_server_) link_server_->drain();  // crash reports before deaths
    const std::vector<RankRecord> records = registry_.snapshot();
    crashes_->check_deaths(records);
    crashes_->flush_terminated(/*force=*/false);
    dump_timelines_for_crashes();
    if (records.empty() && !detector_.report().hung) return;
    check_collectives(records);
    const Snapshot snap = take_snapshot(records, poll_scratch_.get());
    checker_.note_comm_names(snap);  // for the mismatches of the next polls
    HangEvent event;
    if (job_view_ && !records.empty()) {
      // The whole job: this node's ranks and the other nodes' latest.
      const RankRegistration& any = records.front().reg;
      fingerprints_.note_members(snap);
      checker_.note_cross_node(fingerprints_.comms());
      exchange_fingerprints(any.group_rank);
      job_view_->offer(snap, any.group_rank, any.world_size, any.host,
                       wants_job_view(snap, options_.hang_timeout_s, detector_.report().hung));
      event = detector_.update(job_view_->merge(snap, options_.hang_timeout_s));
    } else {
      event = detector_.update(snap);
    }
    {
      std::lock_guard<std::mutex> lock(report_mutex_);
      published_report_ = std::make_shared<const HangReport>(detector_.report());
    }
    if (event != HangEvent::kNone) on_hang_event(event, detector_.report());
  } catch (const std::exception& e) {
    SUP_LOG_ERROR("poll failed: %s", e.what());
  }
}

void Supervisor::check_collectives(const std::vector<RankRecord>& records) {
  recorder::RingSnapshot snap;
  for (const RankRecord& r : records) {
    if (!r.ring) continue;
    RingCursor& cur = ring_cursors_[r.reg.rank];
    if (cur.pid != r.reg.pid) cur = RingCursor{r.reg.pid, 0, 0};  // a new process: its own ring
    std::string error;
    if (!r.ring->read(&snap, &error, cur.next)) continue;  // truncated: the rank is going away
    for (const recorder::RecordData& d : snap.records) {
      checker_.add(r.reg.rank, d);
      if (job_view_) fingerprints_.add(r.reg.rank, d);
    }
    // A position being rewritten as we read it is retried on the next poll
    // (a few times: a record is rewritten only when its state changes).
    if (snap.first_skipped != UINT64_MAX && snap.first_skipped >= cur.next && cur.retries < 3) {
      cur.retries = snap.first_skipped == cur.next ? cur.retries + 1 : 0;
      cur.next = snap.first_skipped;
    } else {
      cur.retries = 0;
      cur.next = snap.head;
    }
  }
  std::vector<Mismatch> found = checker_.check(monotonic_now_ns(), unix_now_s());
  collectives_checked_.store(checker_.compared(), std::memory_order_relaxed);
  // Names known from earlier polls miss a communicator created since: read
  // the pages now (after its records), only when a mismatch has no name.
  bool unnamed = false;
  for (const Mismatch& m : found) unnamed = unnamed || m.comm_name.empty();
  if (unnamed) {
    checker_.note_comm_names(take_snapshot(records, poll_scratch_.get()));
    for (Mismatch& m : found) {
      if (!m.comm_name.empty()) continue;
      m.comm_name = checker_.comm_name(m.comm_hash);
      if (!m.comm_name.empty()) m.summary = mismatch_sentence(m);
    }
  }
  for (Mismatch& m : found) {
    // Reported job-wide already (on_job_mismatch)?
    if (!reported_collectives_.insert({m.comm_hash, m.seq}).second) continue;
    on_mismatch(std::move(m));
  }
}

void Supervisor::exchange_fingerprints(int node) {
  if (node < 0) return;
  const uint64_t now = monotonic_now_ns();
  if (now - std::min(now, fingerprints_offered_ns_) >= kFingerprintPeriodNs) {
    fingerprints_offered_ns_ = now;
    // What is new since the last offer: the store keeps the last few
    // (job_view.h), so each collective is written once.
    NodeFingerprints fresh = fingerprints_.window(node, fingerprints_published_);
    for (const auto& [comm, seq] : fresh.last_seqs()) fingerprints_published_[comm] = seq;
    job_view_->offer_fingerprints(std::move(fresh), fingerprints_.comms());
  }
  const std::vector<NodeFingerprints> peers = job_view_->take_peer_fingerprints();
  if (peers.empty()) return;  // nothing compared: GET /hang's state stands
  for (const NodeFingerprints& peer : peers) {
    for (const Disagreement& d : compare_windows(fingerprints_, peer, job_reported_after_,
                                                 &job_unaligned_, &job_compared_through_)) {
      uint64_t& after = job_reported_after_[d.comm_hash];
      after = std::max(after, d.seq);
      SUP_LOG_INFO(
          "collective #%llu on comm %s: node %d's ranks and node %d's disagree; "
          "asking every node for its fingerprints",
          static_cast<unsigned long long>(d.seq), comm_hex(d.comm_hash).c_str(), node, peer.node);
      // The job-wide groups need every node's window: the view's thread reads
      // them and publishes the mismatch for every node (on_job_mismatch).
      job_view_->publish_mismatch(d.comm_hash, d.seq, fingerprints_.window(node));
    }
  }
  nlohmann::json through = nlohmann::json::object();
  for (const auto& [comm, seq] : job_compared_through_) through[comm_hex(comm)] = seq;
  nlohmann::json unaligned = nlohmann::json::array();
  for (const uint64_t comm : job_unaligned_) unaligned.push_back(comm_hex(comm));
  std::lock_guard<std::mutex> lock(report_mutex_);
  job_fingerprint_status_ = {{"compared_through", std::move(through)},
                             {"unaligned", std::move(unaligned)}};
}

void Supervisor::on_job_mismatch(Mismatch m, int from_node) {
  uint64_t& after = job_reported_after_[m.comm_hash];
  after = std::max(after, m.seq);
  checker_.mark_reported(m.comm_hash, m.seq);
  if (!reported_collectives_.insert({m.comm_hash, m.seq}).second) return;  // reported here
  m.comm_name = checker_.comm_name(m.comm_hash);
  m.detected_ns = monotonic_now_ns();
  m.summary = mismatch_sentence(m);
  SUP_LOG_INFO("node %d found a collective mismatch across the job's nodes", from_node);
  on_mismatch(std::move(m));
}

void Supervisor::on_mismatch(Mismatch m) {
  SUP_LOG_WARN("collective mismatch: %s", m.summary.c_str());
  nlohmann::json j = mismatch_json(m);
  // The same evidence as a hang: every rank's recent operations and stacks,
  // once per mismatch (the checker reports each collective once).
  const TimelineDumpResult t = dump_timelines_now("mismatch", "");
  j["timeline"] = t.ok ? nlohmann::json{{"dir", t.dir}} : nlohmann::json(nullptr);
  j["stacks"] = nullptr;
  if (stacks_) {
    const StackDumper::Started started =
        stacks_->start(stack_targets(registry_.snapshot()), "mismatch",
                       [](std::shared_ptr<const StackDumpReport>) {});
    if (started.status == StackDumper::StartStatus::kStarted) {
      j["stacks"] = nlohmann::json{{"dir", started.dir}};
      SUP_LOG_INFO("collecting the stacks of the ranks into %s", started.dir.c_str());
    } else {
      SUP_LOG_WARN("no stacks for this mismatch: %s",
                   started.status == StackDumper::StartStatus::kBusy
                       ? ("a stack collection is running (" + started.dir + ")").c_str()
                       : started.error.c_str());
    }
  }
  nlohmann::json all = nlohmann::json::array();
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    ++mismatch_total_;
    const std::vector<int>& blamed = m.odd_ranks.empty() ? m.ranks : m.odd_ranks;
    mismatched_ranks_.insert(blamed.begin(), blamed.end());
    mismatches_.push_back(std::move(m));
    if (mismatches_.size() > kMaxMismatchesKept) mismatches_.erase(mismatches_.begin());
    mismatch_files_.push_back(std::move(j));
    if (mismatch_files_.size() > kMaxMismatchesKept) mismatch_files_.erase(mismatch_files_.begin());
    for (const nlohmann::json& x : mismatch_files_) all.push_back(x);
  }
  if (dump_dir_.empty()) return;
  std::string error;
  if (!write_file_atomically(dump_dir_ + "/mismatch.json",
                             json_text(nlohmann::json{{"mismatches", all}}, 2) + "\n", &error)) {
    SUP_LOG_WARN("%s", error.c_str());
  }
}

void Supervisor::on_hang_event(HangEvent event, const HangReport& report) {
  if (event == HangEvent::kCleared) {
    SUP_LOG_INFO("hang cleared");
    return;  // hang.json keeps the last hang for the post-mortem
  }
  SUP_LOG_WARN("hang: %s", report.summary.c_str());
  hang_in_file_ = report;
  if (job_view_) job_view_->request_dumps("hang");  // nodes that do not see it yet
  dump_timelines_for_hang();
  // Starting the collection only spawns its thread; hang.json then names the
  // folder being written, and is rewritten when the stacks are in.
  start_hang_stacks();
  write_hang_file();
  if (event == HangEvent::kDetected && options_.on_hang == OnHang::kKill && job_) {
    if (stacks_ && stacks_->running()) {
      // Killing now would lose the evidence: on_stacks_done kills (each rank's
      // collection is bounded by its timeout).
      kill_after_stacks_ = true;
      SUP_LOG_INFO("--on-hang kill: the job ends once its stacks are collected");
    } else {
      killed_for_hang_ = true;
      job_->terminate(SIGTERM, "hang detected and --on-hang kill");
    }
  }
}

void Supervisor::on_remote_dump_request(const std::string& reason, int from_node) {
  // A hang this node sees itself was dumped when it saw it (the verdicts
  // agree: every node judges the same merged snapshot).
  if (reason == "hang" && hang_in_file_) return;
  SUP_LOG_INFO("node %d asked every node for its dumps (%s)", from_node, reason.c_str());
  dump_timelines_now("remote-" + reason, "");
  if (!stacks_) return;
  const StackDumper::Started started =
      stacks_->start(stack_targets(registry_.snapshot()), "remote-" + reason,
                     [](std::shared_ptr<const StackDumpReport>) {});
  if (started.status == StackDumper::StartStatus::kStarted) {
    SUP_LOG_INFO("collecting the stacks of the ranks into %s", started.dir.c_str());
  }
}

void Supervisor::start_hang_stacks() {
  if (!stacks_ || !hang_in_file_ || killed_for_hang_) return;
  // A changed hang deserves new stacks only when some rank is stuck in an
  // operation not seen stuck before: ranks merely exiting (as after the
  // kill) or being found missing do not change where the others wait.
  const std::vector<std::string> keys = stuck_operation_keys(*hang_in_file_);
  bool new_key = false;
  for (const std::string& k : keys) {
    new_key |=
        std::find(hangs_collected_.begin(), hangs_collected_.end(), k) == hangs_collected_.end();
  }
  if (!new_key) return;
  const StackDumper::Started started = stacks_->start(
      stack_targets(registry_.snapshot()), "hang",
      [this](std::shared_ptr<const StackDumpReport> r) {
        boost::asio::post(io_, [this, r] { on_stacks_done(r); });
      },
      json_text(hang_report_json(*hang_in_file_), 2) + "\n");
  switch (started.status) {
    case StackDumper::StartStatus::kStarted:
      for (const std::string& k : keys) {
        if (hangs_collected_.size() >= 4096) hangs_collected_.erase(hangs_collected_.begin());
        hangs_collected_.push_back(k);
      }
      hang_stacks_ = stacks_->latest();
      SUP_LOG_INFO("collecting the stacks of %zu rank(s) into %s",
                   hang_stacks_ ? hang_stacks_->ranks.size() : size_t{0}, started.dir.c_str());
      break;
    case StackDumper::StartStatus::kBusy:
      hang_stacks_queued_ = true;
      SUP_LOG_INFO("a stack collection is running (%s); this hang's follows it",
                   started.dir.c_str());
      break;
    case StackDumper::StartStatus::kNoTargets:
    case StackDumper::StartStatus::kFailed:
      SUP_LOG_WARN("no stacks for this hang: %s", started.error.c_str());
      break;
  }
}

void Supervisor::on_stacks_done(std::shared_ptr<const StackDumpReport> report) {
  if (report->reason == "hang") {
    hang_stacks_ = report;
    write_hang_file();
  }
  // A hang seen while a requested dump ran gets its own dump first, unless
  // the job is to be killed and this hang's stacks are already in.
  if (hang_stacks_queued_ && !(kill_after_stacks_ && report->reason == "hang")) {
    hang_stacks_queued_ = false;
    start_hang_stacks();
    if (stacks_->running()) return;
  }
  hang_stacks_queued_ = false;
  if (kill_after_stacks_ && job_) {
    kill_after_stacks_ = false;
    killed_for_hang_ = true;
    job_->terminate(SIGTERM, "hang detected and --on-hang kill (stacks collected)");
  }
}

void Supervisor::write_hang_file() {
  if (dump_dir_.empty() || !hang_in_file_) return;
  nlohmann::json j = hang_report_json(*hang_in_file_);
  j["stacks"] = hang_stacks_ ? stack_dump_json(*hang_stacks_) : nlohmann::json(nullptr);
  j["timeline"] = hang_timeline_dir_.empty() ? nlohmann::json(nullptr)
                                             : nlohmann::json{{"dir", hang_timeline_dir_}};
  std::string error;
  if (!write_file_atomically(dump_dir_ + "/hang.json", json_text(j, 2) + "\n", &error)) {
    SUP_LOG_WARN("%s", error.c_str());
  }
}

int Supervisor::dump_stacks_request(std::string* json_body) {
  using nlohmann::json;
  if (!stacks_) {
    *json_body = json{{"error", "no usable dump directory: stacks cannot be written"}}.dump();
    return 503;
  }
  const StackDumper::Started started =
      stacks_->start(stack_targets(registry_.snapshot()), "request",
                     [this](std::shared_ptr<const StackDumpReport> r) {
                       boost::asio::post(io_, [this, r] { on_stacks_done(r); });
                     });
  switch (started.status) {
    case StackDumper::StartStatus::kStarted: {
      json ranks = json::array();
      if (auto latest = stacks_->latest()) {
        for (const RankStackResult& r : latest->ranks) ranks.push_back(r.rank);
      }
      *json_body = json{{"dir", started.dir}, {"ranks", ranks}}.dump();
      SUP_LOG_INFO("POST /dump/stacks: collecting the stacks of %zu rank(s) into %s", ranks.size(),
                   started.dir.c_str());
      return 202;
    }
    case StackDumper::StartStatus::kBusy:
      *json_body = json{{"error", "a stack collection is running"}, {"dir", started.dir}}.dump();
      return 409;
    case StackDumper::StartStatus::kNoTargets:
      *json_body = json{{"error", started.error}}.dump();
      return 503;
    case StackDumper::StartStatus::kFailed:
      break;
  }
  *json_body = json{{"error", started.error}}.dump();
  return 500;
}

TimelineDumpResult Supervisor::dump_timelines_now(const std::string& reason,
                                                  const std::string& hang_json) {
  TimelineDumpResult result;
  if (dump_dir_.empty()) {
    result.errors.push_back("no usable dump directory");
    return result;
  }
  std::vector<TimelineTarget> targets;
  for (const RankRecord& r : registry_.snapshot()) {
    targets.push_back(TimelineTarget{r.reg.rank, r.reg.world_size, r.ring});
  }
  result = dump_timelines(targets, dump_dir_, reason, hang_json, unix_now_s());
  for (const std::string& e : result.errors) SUP_LOG_WARN("flight recorder: %s", e.c_str());
  if (result.ok) {
    SUP_LOG_INFO("flight recorder (%s): %llu operations of %zu rank(s) in %s", reason.c_str(),
                 static_cast<unsigned long long>(result.records), result.ranks.size(),
                 result.dir.c_str());
  }
  return result;
}

void Supervisor::dump_timelines_for_hang() {
  if (!hang_in_file_) return;
  // Once per stuck operation: a hang that only changes by ranks exiting or
  // being found missing keeps the first dump (the rings moved on since).
  const std::vector<std::string> keys = stuck_operation_keys(*hang_in_file_);
  bool new_key = keys.empty() && hang_timeline_dir_.empty();
  for (const std::string& k : keys) {
    new_key |= std::find(hang_timelines_dumped_.begin(), hang_timelines_dumped_.end(), k) ==
               hang_timelines_dumped_.end();
  }
  if (!new_key) return;
  for (const std::string& k : keys) {
    if (hang_timelines_dumped_.size() >= 4096) {
      hang_timelines_dumped_.erase(hang_timelines_dumped_.begin());
    }
    hang_timelines_dumped_.push_back(k);
  }
  const TimelineDumpResult r =
      dump_timelines_now("hang", json_text(hang_report_json(*hang_in_file_), 2) + "\n");
  if (r.ok) hang_timeline_dir_ = r.dir;
}

void Supervisor::dump_timelines_for_crashes() {
  const uint64_t n = crashes_->incidents();
  if (n == crash_incidents_dumped_) return;
  crash_incidents_dumped_ = n;
  std::string hang;
  if (hang_in_file_) hang = json_text(hang_report_json(*hang_in_file_), 2) + "\n";
  dump_timelines_now("crash", hang);
}

int Supervisor::dump_timeline_request(std::string* json_body) {
  using nlohmann::json;
  std::shared_ptr<const HangReport> report;
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    report = published_report_;
  }
  const std::string hang =
      report && report->hung ? json_text(hang_report_json(*report), 2) + "\n" : std::string();
  const TimelineDumpResult r = dump_timelines_now("request", hang);
  json errors = json::array();
  for (const std::string& e : r.errors) errors.push_back(e);
  if (!r.ok) {
    *json_body = json{
        {"error", r.errors.empty() ? "no rank has a flight recorder" : r.errors[0]},
        {"errors",
         errors}}.dump();
    return dump_dir_.empty() ? 503 : 500;
  }
  *json_body = json{
      {"dir", r.dir},
      {"ranks", r.ranks},
      {"operations", r.records},
      {"trace", r.trace.empty() ? json(nullptr) : json(r.trace)},
      {"errors",
       errors}}.dump();
  return 200;
}

std::string Supervisor::hang_json() const {
  std::shared_ptr<const HangReport> report;
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    report = published_report_;
  }
  HangReport shown = *report;
  shown.timeout_s = options_.hang_timeout_s;
  nlohmann::json j = hang_report_json(shown);
  std::shared_ptr<const StackDumpReport> stacks = stacks_ ? stacks_->latest() : nullptr;
  j["stacks"] = stacks ? stack_dump_json(*stacks) : nlohmann::json(nullptr);
  nlohmann::json mismatches = nlohmann::json::array();
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    for (const nlohmann::json& m : mismatch_files_) mismatches.push_back(m);
    j["mismatch_total"] = mismatch_total_;
    j["collectives_checked"] = collectives_checked_.load(std::memory_order_relaxed);
  }
  j["mismatches"] = std::move(mismatches);
  if (job_view_) {
    const JobViewStatus s = job_view_->status();
    j["coordinator"] =
        nlohmann::json{{"url", s.url},
                       {"job_id", s.job_id},
                       {"connected", s.connected},
                       {"alarm", s.alarm},
                       {"other_nodes", s.nodes},
                       {"rounds", s.rounds},
                       {"failed_rounds", s.failures},
                       // Other nodes' documents read, and reads of all of them.
                       {"documents_read", s.docs_read},
                       {"full_reads", s.full_reads},
                       {"last_error", s.last_error.empty() ? nlohmann::json(nullptr)
                                                           : nlohmann::json(s.last_error)}};
    // The job-wide collective comparison: the nodes this one compares with,
    // per communicator the highest collective found in agreement with them,
    // and the communicators no longer compared (sequences diverged).
    nlohmann::json fp = nlohmann::json{{"peers", s.fingerprint_peers}};
    {
      std::lock_guard<std::mutex> lock(report_mutex_);
      fp["compared_through"] =
          job_fingerprint_status_.value("compared_through", nlohmann::json::object());
      fp["unaligned"] = job_fingerprint_status_.value("unaligned", nlohmann::json::array());
    }
    j["coordinator"]["collectives"] = std::move(fp);
  } else {
    j["coordinator"] = nullptr;
  }
  return json_text(j, 2);
}

std::string Supervisor::ranks_json_text() const {
  std::shared_ptr<const HangReport> report;
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    report = published_report_;
  }
  auto scratch = std::make_unique<proto::StatusSnapshot>();
  const Snapshot snap = take_snapshot(registry_.snapshot(), scratch.get());
  const std::map<int, nlohmann::json> crashes = crashes_->crash_json_by_rank();
  return json_text(ranks_json(snap, *report, &crashes), 2);
}

std::string Supervisor::metrics_text() const {
  std::shared_ptr<const HangReport> report;
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    report = published_report_;
  }
  const std::map<pid_t, std::string> ended = crashes_->outcomes_by_pid();
  std::set<int> mismatched;
  uint64_t mismatch_total = 0;
  {
    std::lock_guard<std::mutex> lock(report_mutex_);
    mismatched = mismatched_ranks_;
    mismatch_total = mismatch_total_;
  }
  const bool running = job_running_.load();
  if (running) scraped_while_running_ = true;  // somebody will want to see the end
  return metrics_->render(registry_.snapshot(), *report, &ended, running, &mismatched,
                          mismatch_total);
}

}  // namespace xpu_timer::supervisor
