#include "supervisor/incidents/incident_dumps.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>

#include "common/clock.h"
#include "common/comm_names.h"
#include "supervisor/job/process_table.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {
namespace {

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

// A supervisor killed in the middle of a dump (SIGKILL, OOM) leaves the folder
// it had just made, empty; the next one in the same --dump-dir removes such
// folders (rmdir removes only empty ones) so that nobody opens them for
// evidence.
void remove_empty_dump_folders(const std::string& dump_dir) {
  DIR* d = ::opendir(dump_dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> removed;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("stacks-", 0) != 0 && name.rfind("timeline-", 0) != 0) continue;
    if (::rmdir((dump_dir + "/" + name).c_str()) == 0) removed.push_back(name);
  }
  ::closedir(d);
  if (removed.empty()) return;
  std::string names;
  for (const std::string& n : removed) names += (names.empty() ? "" : ", ") + n;
  SUP_LOG_INFO("removed %zu empty dump folder(s) an interrupted run left in %s: %s",
               removed.size(), dump_dir.c_str(), names.c_str());
}

}  // namespace

IncidentDumps::IncidentDumps(std::string dump_dir, RanksFn ranks)
    : dump_dir_(std::move(dump_dir)), ranks_(std::move(ranks)) {
  if (dump_dir_.empty()) return;
  remove_empty_dump_folders(dump_dir_);
  StackDumpSettings settings;
  settings.dump_dir = dump_dir_;
  stacks_ = std::make_unique<StackDumper>(std::move(settings));
}

IncidentDumps::~IncidentDumps() = default;

TimelineDumpResult IncidentDumps::timelines(const std::string& reason,
                                            const std::string& hang_json) {
  TimelineDumpResult result;
  if (dump_dir_.empty()) {
    result.errors.push_back("no usable dump directory");
    return result;
  }
  std::vector<TimelineTarget> targets;
  proto::StatusSnapshot snap;  // an incident's: a fresh one
  for (const RankRecord& r : ranks_()) {
    TimelineTarget t{r.reg.rank, r.reg.world_size, r.ring, {}};
    if (r.page != nullptr && r.page->read(&snap)) {
      const proto::StatusPage& page = snap.page();
      const uint32_t n = std::min<uint32_t>(page.ncomms, proto::kMaxComms);
      for (uint32_t i = 0; i < n; ++i) {
        const std::string name = comm_slot_name(page.comms[i]);
        if (!name.empty()) t.comm_names[page.comms[i].comm_hash] = name;
      }
    }
    targets.push_back(std::move(t));
  }
  result = timelines_.dump(targets, dump_dir_, reason, hang_json, unix_now_s());
  for (const std::string& e : result.errors) SUP_LOG_WARN("flight recorder: %s", e.c_str());
  if (result.ok) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      latest_timeline_dir_ = result.dir;
    }
    SUP_LOG_INFO("flight recorder (%s): %llu operations of %zu rank(s) in %s", reason.c_str(),
                 static_cast<unsigned long long>(result.records), result.ranks.size(),
                 result.dir.c_str());
  }
  return result;
}

StackDumper::Started IncidentDumps::stacks_for(const std::string& reason, StackDumper::DoneFn done,
                                               const std::string& hang_json) {
  if (!stacks_) {
    return StackDumper::Started{StackDumper::StartStatus::kFailed, "",
                                "no usable dump directory: stacks cannot be written"};
  }
  return stacks_->start(stack_targets(ranks_()), reason, std::move(done), hang_json);
}

nlohmann::json IncidentDumps::timelines_and_stacks(const std::string& reason,
                                                   StackDumper::DoneFn done) {
  nlohmann::json j;
  const TimelineDumpResult t = timelines(reason, "");
  j["timeline"] = t.ok ? nlohmann::json{{"dir", t.dir}} : nlohmann::json(nullptr);
  j["stacks"] = nullptr;
  if (!stacks_) return j;
  if (!done) done = [](std::shared_ptr<const StackDumpReport>) {};
  const StackDumper::Started started = stacks_for(reason, std::move(done));
  if (started.status == StackDumper::StartStatus::kStarted) {
    j["stacks"] = nlohmann::json{{"dir", started.dir}};
    SUP_LOG_INFO("collecting the stacks of the ranks into %s", started.dir.c_str());
  } else {
    SUP_LOG_WARN("no stacks for this %s: %s", reason.c_str(),
                 started.status == StackDumper::StartStatus::kBusy
                     ? ("a stack collection is running (" + started.dir + ")").c_str()
                     : started.error.c_str());
  }
  return j;
}

std::string IncidentDumps::latest_timeline_dir() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_timeline_dir_;
}

int IncidentDumps::stacks_request(StackDumper::DoneFn done, std::string* json_body) {
  using nlohmann::json;
  if (!stacks_) {
    *json_body = json{{"error", "no usable dump directory: stacks cannot be written"}}.dump();
    return 503;
  }
  const StackDumper::Started started = stacks_for("request", std::move(done));
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

int IncidentDumps::timeline_request(const std::string& hang_json, std::string* json_body) {
  using nlohmann::json;
  if (!dump_dir_.empty()) {
    std::string running;
    if (timelines_.busy(&running)) {
      *json_body = json{{"error", "a timeline dump is being converted"}, {"dir", running}}.dump();
      return 409;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t now = monotonic_ns();
    const double since_s = static_cast<double>(now - last_timeline_request_ns_) * 1e-9;
    if (last_timeline_request_ns_ != 0 && since_s < kRequestIntervalS) {
      *json_body = json{{"error", "timeline dumps are requested too often"},
                        {"retry_after_s", kRequestIntervalS - since_s}}
                       .dump();
      return 429;
    }
    last_timeline_request_ns_ = now;
  }
  const TimelineDumpResult r = timelines("request", hang_json);
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
      {"converting", r.converting},
      {"errors",
       errors}}.dump();
  return 200;
}

}  // namespace xpu_timer::supervisor
