#include "supervisor/incidents/stack_dump.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include <algorithm>

#include "common/clock.h"
#include "flamegraph/dump_merger.h"
#include "flamegraph/flamegraph_files.h"
#include "stack/stack_file.h"
#include "supervisor/incidents/dump_files.h"
#include "supervisor/incidents/signal_free_thread.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {
namespace {

constexpr size_t kMaxRenderWarnings = 50;
constexpr size_t kMaxErrorsLoggedPerRank = 3;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool is_permission_error(const std::string& line) {
  return line.find("operation not permitted") != std::string::npos;
}

}  // namespace

StackDumper::StackDumper(StackDumpSettings settings, CollectFn collect)
    : settings_(std::move(settings)), collect_(std::move(collect)) {}

StackDumper::~StackDumper() {
  std::thread last;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last = std::move(thread_);
  }
  if (last.joinable()) last.join();
}

bool StackDumper::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

std::shared_ptr<const StackDumpReport> StackDumper::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

bool StackDumper::make_folder(double now_unix_s, std::string* dir, std::string* error) const {
  if (!make_directories(settings_.dump_dir, error)) return false;
  const std::string base = settings_.dump_dir + "/" + stack_dump_folder_name(now_unix_s);
  for (int attempt = 1; attempt <= 20; ++attempt) {
    const std::string path = attempt == 1 ? base : base + "-" + std::to_string(attempt);
    if (::mkdir(path.c_str(), 0755) == 0) {
      *dir = path;
      return true;
    }
    if (errno != EEXIST) {
      *error = "cannot create " + path + ": " + strerror(errno);
      return false;
    }
  }
  *error = "cannot create a fresh folder " + base + "-N: all names taken";
  return false;
}

StackDumper::Started StackDumper::start(std::vector<StackTarget> targets, const std::string& reason,
                                        DoneFn done, const std::string& hang_json) {
  Started out;
  // One start() at a time, so that no other start can put a thread into
  // thread_ between the join below and the assignment at the end.
  std::lock_guard<std::mutex> one_start(start_mutex_);
  // The previous coordinator has cleared running_ and only calls its `done`
  // before it ends: join it outside mutex_ (its `done` may read latest()).
  std::thread previous;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) previous = std::move(thread_);
  }
  if (previous.joinable()) previous.join();

  std::lock_guard<std::mutex> lock(mutex_);
  if (running_) {
    out.status = StartStatus::kBusy;
    out.dir = latest_ ? latest_->dir : std::string();
    return out;
  }
  if (targets.empty()) {
    out.status = StartStatus::kNoTargets;
    out.error = "no registered rank is alive on this node";
    return out;
  }
  const double now = unix_now_s();
  if (!make_folder(now, &out.dir, &out.error)) {
    out.status = StartStatus::kFailed;
    return out;
  }
  if (!hang_json.empty() && !write_file_atomically(out.dir + "/hang.json", hang_json, &out.error)) {
    SUP_LOG_WARN("%s; the flame graphs will not name the hang", out.error.c_str());
    out.error.clear();
  }
  std::sort(targets.begin(), targets.end(),
            [](const StackTarget& a, const StackTarget& b) { return a.rank < b.rank; });
  auto report = std::make_shared<StackDumpReport>();
  report->dir = out.dir;
  report->reason = reason;
  report->in_progress = true;
  report->started_at = now;
  for (const StackTarget& t : targets) {
    RankStackResult r;
    r.rank = t.rank;
    r.pid = t.pid;
    report->ranks.push_back(std::move(r));
  }
  auto in_progress = std::make_shared<const StackDumpReport>(*report);
  Job job{std::move(targets), std::move(report), std::move(done)};
  try {
    thread_ =
        spawn_without_signals([this, job = std::move(job)]() mutable { run(std::move(job)); });
  } catch (const std::exception& e) {
    out.status = StartStatus::kFailed;
    out.error = std::string("cannot start the stack collection thread: ") + e.what();
    ::unlink((out.dir + "/hang.json").c_str());
    ::rmdir(out.dir.c_str());
    return out;
  }
  running_ = true;
  latest_ = std::move(in_progress);
  out.status = StartStatus::kStarted;
  return out;
}

RankStackResult StackDumper::collect_one(const StackTarget& target, const std::string& dir) {
  RankStackResult out;
  out.rank = target.rank;
  out.pid = target.pid;
  stack::CollectOptions options;
  options.rank = target.rank;
  options.world_size = target.world_size;
  options.stop_timeout = settings_.stop_timeout;
  options.child_timeout = settings_.rank_timeout;
  stack::CollectResult result = collect_(target.pid, options);
  stack::ProcessStack& s = result.stack;
  // The file is named and merged by these: keep them ours even when the
  // collector could not fill them (it crashed, timed out).
  s.rank = target.rank;
  s.world_size = target.world_size;
  if (s.pid == 0) s.pid = target.pid;
  out.attached = result.attached;
  out.stopped_ms = s.stopped_ms;
  out.threads = s.threads.size();
  out.process_state = s.process_state;
  out.errors = s.errors;
  if (!result.attached && !s.errors.empty() && is_permission_error(s.errors.front()) &&
      !permission_logged_.exchange(true)) {
    SUP_LOG_WARN(
        "%s: no stacks can be collected (the collector is a forked child of the "
        "supervisor, not an ancestor of the ranks; give the supervisor CAP_SYS_PTRACE, "
        "e.g. docker --cap-add SYS_PTRACE)",
        s.errors.front().c_str());
  }
  // A process that vanished before we came leaves nothing worth a file: the
  // viewer then counts the rank as leaking, which is what it did.
  if (result.attached || !s.threads.empty()) {
    const std::string path = dir + "/" + stack::stack_file_name(target.rank, target.world_size);
    std::string error;
    if (stack::write_stack_file(s, path, &error)) {
      out.file = path;
    } else {
      out.errors.push_back(error);
    }
  }
  return out;
}

void StackDumper::render(StackDumpReport* report) {
  flamegraph::MergeOptions options;
  options.threads = 2;
  options.progress = false;
  flamegraph::DumpMerge merge;
  std::string error;
  if (!flamegraph::merge_dump(report->dir, options, &merge, &error)) {
    report->render_error = error;
  } else {
    // A hang's folder holds its hang.json (start()); the viewer's lookup.
    std::string warning;
    const auto verdict = flamegraph::find_hang_verdict(report->dir, &warning);
    if (!warning.empty()) merge.warnings.push_back(warning);
    if (!flamegraph::write_flamegraphs(merge.merged, report->dir, &report->outputs, &error,
                                       verdict)) {
      report->render_error = error;
    }
  }
  for (size_t i = 0; i < merge.warnings.size() && i < kMaxRenderWarnings; ++i) {
    report->render_warnings.push_back(merge.warnings[i]);
  }
  if (merge.warnings.size() > kMaxRenderWarnings) {
    report->render_warnings.push_back(
        "... and " + std::to_string(merge.warnings.size() - kMaxRenderWarnings) + " more");
  }
}

void StackDumper::run(Job job) {
  StackDumpReport& report = *job.report;
  const auto start = std::chrono::steady_clock::now();
  const size_t n = job.targets.size();
  std::vector<RankStackResult> results(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      try {
        results[i] = collect_one(job.targets[i], report.dir);
      } catch (const std::exception& e) {
        results[i].rank = job.targets[i].rank;
        results[i].pid = job.targets[i].pid;
        results[i].errors.push_back(std::string("stack collection failed: ") + e.what());
      }
    }
  };
  std::vector<std::thread> workers;
  const size_t wanted = std::min<size_t>(std::max(1u, settings_.max_workers), n);
  for (size_t w = 0; w < wanted; ++w) {
    try {
      workers.push_back(spawn_without_signals(work));
    } catch (const std::exception& e) {
      SUP_LOG_WARN("stack collection: only %zu worker thread(s): %s", workers.size(), e.what());
      break;
    }
  }
  if (workers.empty()) work();  // no thread could start: collect here
  for (std::thread& t : workers) t.join();
  report.ranks = std::move(results);
  report.collect_s = seconds_since(start);
  report.collected_at = unix_now_s();

  const bool any_file = std::any_of(report.ranks.begin(), report.ranks.end(),
                                    [](const RankStackResult& r) { return !r.file.empty(); });
  const auto render_start = std::chrono::steady_clock::now();
  if (!any_file) {
    report.render_error = "no stack file was written";
  } else if (settings_.render) {
    try {
      render(&report);
    } catch (const std::exception& e) {
      report.render_error = std::string("flame graphs failed: ") + e.what();
    }
  }
  report.render_s = seconds_since(render_start);
  report.in_progress = false;

  for (const RankStackResult& r : report.ranks) {
    for (size_t i = 0; i < r.errors.size() && i < kMaxErrorsLoggedPerRank; ++i) {
      SUP_LOG_WARN("stacks of rank %d (pid %d): %s", r.rank, r.pid, r.errors[i].c_str());
    }
  }
  SUP_LOG_INFO("%s", stack_dump_summary(report).c_str());
  if (!report.render_error.empty()) {
    SUP_LOG_WARN("flame graphs of %s not written: %s", report.dir.c_str(),
                 report.render_error.c_str());
  } else if (settings_.render) {
    SUP_LOG_INFO("flame graphs in %.2f s: %s/{cpp,py,mixed}_stack.svg", report.render_s,
                 report.dir.c_str());
  }

  std::shared_ptr<const StackDumpReport> final_report = std::move(job.report);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    latest_ = final_report;
    running_ = false;
  }
  if (job.done) {
    try {
      job.done(final_report);
    } catch (const std::exception& e) {
      SUP_LOG_ERROR("after the stack collection: %s", e.what());
    }
  }
}

}  // namespace xpu_timer::supervisor
