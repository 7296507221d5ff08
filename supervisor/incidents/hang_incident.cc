#include "supervisor/incidents/hang_incident.h"

#include <algorithm>
#include <cstdio>

#include "common/clock.h"
#include "common/hang_document.h"
#include "supervisor/analysis/wait_graph.h"
#include "supervisor/incidents/dump_files.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {
namespace {

// The reason of a verdict's dumps ("hang", "stall"): it names the timeline
// folder and tells the verdict's own stack dump from others.
const char* verdict_reason(const HangReport& report) { return report.stalled ? "stall" : "hang"; }

}  // namespace

// What identifies each stuck rank's pending operation, the same while it
// stays stuck: a collective by rank/pid/communicator/sequence number, any
// other operation by rank/pid/launch time. (A hang with no stuck operation is
// keyed by its sentence; a stall by its start, so that it is dumped once
// however its ranks' states change.) No time for a collective: another
// node's times are rebased onto this host's clock at each merge and move
// with its stamp's age, which made every changed verdict of a 128-node job
// look like a new stuck operation, and dumped again.
std::vector<std::string> hang_dump_keys(const HangReport& report) {
  if (report.stalled) {
    return {"stall@" + std::to_string(report.stalled_since_unix_s.value_or(0))};
  }
  std::vector<std::string> keys;
  for (const RankVerdict& v : report.ranks) {
    if (v.state != RankState::kStuck || !v.has_op) continue;
    std::string key = std::to_string(v.rank) + "/" + std::to_string(v.pid) + "/";
    if (is_collective_op(v.op)) {
      char comm[40];
      std::snprintf(comm, sizeof(comm), "%016llx#%llu",
                    static_cast<unsigned long long>(v.op.comm_hash),
                    static_cast<unsigned long long>(v.op.seq));
      key += comm;
    } else {
      key += std::to_string(v.op.launch_ns);
    }
    keys.push_back(std::move(key));
  }
  if (keys.empty()) keys.push_back(hang_sentence(report, /*with_durations=*/false));
  return keys;
}

namespace {

bool has_new_key(const std::vector<std::string>& keys, const std::vector<std::string>& taken) {
  for (const std::string& k : keys) {
    if (std::find(taken.begin(), taken.end(), k) == taken.end()) return true;
  }
  return false;
}

void remember_keys(const std::vector<std::string>& keys, std::vector<std::string>* taken) {
  for (const std::string& k : keys) {
    if (taken->size() >= 4096) taken->erase(taken->begin());
    taken->push_back(k);
  }
}

// A crash dump's document: the standing verdict's ranks (no hang's words
// unless a hang stands), the crashed rank `crashed` with what ended it.
std::string crash_document_text(const HangReport& now, int crashed_rank, const std::string& what) {
  hang_document::Document doc = hang_document_of(now);
  const std::string headline = "rank " + std::to_string(crashed_rank) + " crashed: " + what;
  doc.summary = now.hung ? now.summary + "; then " + headline : headline;
  bool found = false;
  for (hang_document::Rank& r : doc.ranks) {
    if (r.rank == crashed_rank) {
      r.state = "crashed";
      r.reason = what;
      found = true;
    } else if (!now.hung && (r.state == "stuck" || r.state == "missing")) {
      r.state = "ok";  // what a rank was doing is its operation, not a verdict
    }
  }
  if (!found) {
    hang_document::Rank r;
    r.rank = crashed_rank;
    r.state = "crashed";
    r.reason = what;
    doc.ranks.push_back(std::move(r));
  }
  return hang_document::to_text(doc);
}

}  // namespace

HangIncident::HangIncident(IncidentDumps* dumps, std::string dump_dir, bool kill_on_hang,
                           StacksDone stacks_done)
    : dumps_(dumps),
      dump_dir_(std::move(dump_dir)),
      kill_on_hang_(kill_on_hang),
      stacks_done_(std::move(stacks_done)) {}

// The hang document with this hang's own dumps: hang.json and the dump
// folders' copies.
std::string HangIncident::document(HangDocumentParts parts) const {
  if (!hang_) return std::string();
  if (stacks_) parts.stacks = stack_dump_json(*stacks_);
  if (!timeline_dir_.empty()) parts.timeline = nlohmann::json{{"dir", timeline_dir_}};
  return hang_document_text(*hang_, parts);
}

bool HangIncident::announced(HangEvent event, const HangReport& report) {
  // A changed verdict is not: every node already dumped at the news of the
  // first. At 128 nodes whose silent set kept changing, each change asked
  // every node again (a key each time, never removed), and those keys were
  // most of etcd's traffic.
  return event == HangEvent::kDetected && !report.stalled;
}

HangFollowUp HangIncident::on_event(HangEvent event, const HangReport& report,
                                    const HangDocumentParts& parts) {
  if (event == HangEvent::kCleared) {
    SUP_LOG_INFO("%s cleared", hang_ ? verdict_reason(*hang_) : "hang");
    places_.clear();  // a later verdict waits for its own stacks
    return {};        // hang.json keeps the last verdict for the post-mortem
  }
  if (event == HangEvent::kDetected) places_.clear();
  // A stall looks the same as a long evaluation or checkpoint: it is logged
  // and dumped like a hang, but never ends the job (nor is it announced).
  const bool stall = report.stalled;
  SUP_LOG_WARN("%s: %s", verdict_reason(report), report.summary.c_str());
  hang_ = report;
  hang_declared_ = hang_declared_ || !stall;
  dump_timelines(parts);
  // Starting the collection only spawns its thread; hang.json then names the
  // folder being written, and is rewritten when the stacks are in.
  start_stacks(parts);
  write_file(parts);
  if (stall || event != HangEvent::kDetected || !kill_on_hang_) return {};
  StackDumper* stacks = dumps_->stacks();
  if (stacks != nullptr && stacks->running()) {
    // Killing now would lose the evidence: after_stacks() kills (each rank's
    // collection is bounded by its timeout).
    kill_after_stacks_ = true;
    SUP_LOG_INFO("--on-hang kill: the job ends once its stacks are collected");
    return {};
  }
  killed_for_hang_ = true;
  return {"hang detected and --on-hang kill"};
}

void HangIncident::start_stacks(const HangDocumentParts& parts) {
  if (!dumps_->enabled() || !hang_ || killed_for_hang_) return;
  // A changed hang deserves new stacks only when some rank is stuck in an
  // operation not seen stuck before: ranks merely exiting (as after the
  // kill) or being found missing do not change where the others wait.
  const std::vector<std::string> keys = hang_dump_keys(*hang_);
  if (!has_new_key(keys, stacks_taken_)) return;
  const StackDumper::Started started =
      dumps_->stacks_for(verdict_reason(*hang_), stacks_done_, document(parts));
  switch (started.status) {
    case StackDumper::StartStatus::kStarted:
      remember_keys(keys, &stacks_taken_);
      stacks_ = dumps_->stacks()->latest();
      SUP_LOG_INFO("collecting the stacks of %zu rank(s) into %s",
                   stacks_ ? stacks_->ranks.size() : size_t{0}, started.dir.c_str());
      break;
    case StackDumper::StartStatus::kBusy:
      stacks_queued_ = true;
      SUP_LOG_INFO("a stack collection is running (%s); this hang's follows it",
                   started.dir.c_str());
      break;
    case StackDumper::StartStatus::kNoTargets:
    case StackDumper::StartStatus::kFailed:
      SUP_LOG_WARN("no stacks for this hang: %s", started.error.c_str());
      break;
  }
}

bool HangIncident::take_stacks(const std::shared_ptr<const StackDumpReport>& report,
                               const HangDocumentParts& parts) {
  if (!hang_ || report->reason != verdict_reason(*hang_)) return false;  // not the verdict's own
  stacks_ = report;
  write_file(parts);
  // The poll puts the places into the verdict, which then changes: logged
  // again, hang.json rewritten (culprit_locations.h says why). Now, not
  // at the next poll: a job killed for the hang by after_stacks() would be
  // gone.
  return places_.learn(*report, *hang_) > 0;
}

HangFollowUp HangIncident::after_stacks(const StackDumpReport& report,
                                        const HangDocumentParts& parts) {
  // A hang seen while a requested dump ran gets its own dump first, unless
  // the job is to be killed and this hang's stacks are already in.
  if (stacks_queued_ && !(kill_after_stacks_ && report.reason == "hang")) {
    stacks_queued_ = false;
    start_stacks(parts);
    if (dumps_->stacks()->running()) return {};
  }
  stacks_queued_ = false;
  if (!kill_after_stacks_) return {};
  kill_after_stacks_ = false;
  killed_for_hang_ = true;
  return {"hang detected and --on-hang kill (stacks collected)"};
}

void HangIncident::dump_timelines(const HangDocumentParts& parts) {
  // Once per stuck operation: a hang that only changes by ranks exiting or
  // being found missing keeps the first dump (the rings moved on since).
  const std::vector<std::string> keys = hang_dump_keys(*hang_);
  if (!has_new_key(keys, timelines_taken_)) return;
  remember_keys(keys, &timelines_taken_);
  const TimelineDumpResult r = dumps_->timelines(verdict_reason(*hang_), document(parts));
  if (r.ok) timeline_dir_ = r.dir;
}

void HangIncident::after_crashes(uint64_t incidents, int crashed_rank, const std::string& what,
                                 const HangReport& now) {
  if (incidents == crashes_dumped_) return;
  crashes_dumped_ = incidents;
  const double at = unix_now_s();
  if (crash_dumped_at_s_ > 0 && at - crash_dumped_at_s_ < kCrashIncidentS) return;
  crash_dumped_at_s_ = at;
  dumps_->timelines("crash", crash_document_text(now, crashed_rank, what));
}

void HangIncident::write_file(const HangDocumentParts& parts) {
  if (dump_dir_.empty() || !hang_) return;
  std::string error;
  if (!write_file_atomically(dump_dir_ + "/hang.json", document(parts), &error)) {
    SUP_LOG_WARN("%s", error.c_str());
  }
}

}  // namespace xpu_timer::supervisor
