#include "supervisor/incidents/timeline_dump.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <exception>

#include "supervisor/incidents/dump_files.h"
#include "supervisor/incidents/stack_dump_report.h"
#include "supervisor/log_tee.h"
#include "timeline/trace_conversion.h"

namespace xpu_timer::supervisor {
namespace {

// "timeline-20261123-112233.456-hang", unique within the dump folder.
std::string folder_for(const std::string& dump_dir, const std::string& reason, double now_unix_s) {
  const std::string stamp = stack_dump_folder_name(now_unix_s).substr(sizeof("stacks-") - 1);
  std::string base = dump_dir + "/timeline-" + stamp + "-" + reason;
  std::string dir = base;
  for (int i = 2; ::access(dir.c_str(), F_OK) == 0 && i < 1000; ++i) {
    dir = base + "-" + std::to_string(i);
  }
  return dir;
}

}  // namespace

// One folder to convert: the images as written, and its hang document.
struct TimelineDumper::Job {
  std::string dir;
  std::string hang_json;
  std::string comms_json;  // "" for none
  std::vector<timeline::RankImage> images;
};

TimelineDumper::TimelineDumper() {
  thread_ = std::thread([this] {
    // The process's signals belong to the asio thread.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    run();
  });
}

TimelineDumper::~TimelineDumper() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

TimelineDumpResult TimelineDumper::dump(const std::vector<TimelineTarget>& targets,
                                        const std::string& dump_dir, const std::string& reason,
                                        const std::string& hang_json, double now_unix_s) {
  TimelineDumpResult result;
  try {
    result.dir = folder_for(dump_dir, reason, now_unix_s);
    std::string error;
    if (!make_directories(result.dir, &error)) {
      result.errors.push_back(error);
      return result;
    }
    auto job = std::make_unique<Job>();
    job->dir = result.dir;
    job->hang_json = hang_json;
    for (const TimelineTarget& t : targets) {
      if (!t.ring) {
        result.errors.push_back("rank " + std::to_string(t.rank) + ": no flight recorder");
        continue;
      }
      recorder::RingSnapshot snap;
      if (!t.ring->read(&snap, &error)) {
        result.errors.push_back("rank " + std::to_string(t.rank) + ": " + error);
        continue;
      }
      timeline::RankImage image{t.rank, t.world_size, recorder::ring_image(snap)};
      const std::string path = result.dir + "/" + recorder::dump_file_name(t.rank, t.world_size);
      if (!recorder::write_ring_image(path, image.image, &error)) {
        result.errors.push_back("rank " + std::to_string(t.rank) + ": " + error);
        continue;
      }
      result.ranks.push_back(t.rank);
      result.records += snap.records.size();
      job->images.push_back(std::move(image));
    }
    if (!hang_json.empty() && !write_file_atomically(result.dir + "/hang.json", hang_json, &error)) {
      result.errors.push_back(error);
    }
    std::map<uint64_t, std::string> names;
    for (const TimelineTarget& t : targets) names.insert(t.comm_names.begin(), t.comm_names.end());
    if (!names.empty()) {
      job->comms_json = timeline::comm_names_text(names);
      if (!write_file_atomically(result.dir + "/comms.json", job->comms_json, &error)) {
        result.errors.push_back(error);
      }
    }
    result.ok = !result.ranks.empty();
    if (!result.ok) return result;
    // The trace a user opens in Perfetto: converted on the dumper's thread.
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t waiting = queue_.size() - (running_ ? 1 : 0);
    if (waiting >= kMaxQueued) {
      result.errors.push_back(
          "the trace is not converted: " + std::to_string(waiting) +
          " conversions are waiting; xpu_timer_gen_trace_timeline --path " + result.dir +
          " makes it");
      return result;
    }
    result.trace = result.dir + "/timeline.json";
    result.converting = true;
    queue_.push_back(std::move(job));
    changed_.notify_all();
  } catch (const std::exception& e) {  // allocation failure: report, never throw
    result.errors.push_back(std::string("timeline dump failed: ") + e.what());
  }
  return result;
}

void TimelineDumper::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to convert
    running_ = true;
    current_dir_ = queue_.front()->dir;
    const Job& job = *queue_.front();
    const auto hook = convert_hook_;
    lock.unlock();
    if (hook) hook(job.dir);
    convert(job);
    lock.lock();
    queue_.pop_front();
    running_ = false;
    current_dir_.clear();
    ++converted_;
    changed_.notify_all();
  }
}

void TimelineDumper::convert(const Job& job) {
  try {
    const timeline::LoadedDumps dumps =
        timeline::dumps_from_images(job.dir, job.images, job.hang_json, job.comms_json);
    std::vector<std::string> warnings = dumps.warnings;
    timeline::TraceSummary summary;
    std::string error;
    const std::string trace = job.dir + "/timeline.json";
    const bool ok = timeline::write_trace_file(dumps, timeline::TraceOptions{}, trace, &summary,
                                               &warnings, &error);
    for (const std::string& w : warnings) SUP_LOG_WARN("timeline %s: %s", job.dir.c_str(), w.c_str());
    if (!ok) {
      SUP_LOG_WARN("the trace could not be converted (%s); the .timeline files are in %s",
                   error.c_str(), job.dir.c_str());
      return;
    }
    SUP_LOG_INFO("trace of %zu rank(s) written: %s (%zu events, %zu collective flows)",
                 dumps.ranks.size(), trace.c_str(), summary.events, summary.flows);
  } catch (const std::exception& e) {
    SUP_LOG_WARN("the trace of %s could not be converted: %s", job.dir.c_str(), e.what());
  }
}

bool TimelineDumper::busy(std::string* dir) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (dir != nullptr) *dir = current_dir_.empty() && !queue_.empty() ? queue_.front()->dir : current_dir_;
  return !queue_.empty();
}

void TimelineDumper::set_convert_hook(std::function<void(const std::string& dir)> hook) {
  std::lock_guard<std::mutex> lock(mutex_);
  convert_hook_ = std::move(hook);
}

uint64_t TimelineDumper::converted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return converted_;
}

bool TimelineDumper::wait_idle(int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [this] { return queue_.empty(); });
}

}  // namespace xpu_timer::supervisor
