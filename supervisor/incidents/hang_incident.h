// What the supervisor does about a hang verdict (docs/architecture.md "Hang
// detection"): one log line, the ranks' flight recorders and stacks once per
// stuck operation, <dump-dir>/hang.json (rewritten when the stacks are in),
// and with --on-hang kill the job's termination once the stacks are in, so
// that the evidence is not lost. A stall gets the same (its log line, dumps
// and hang.json, once per stall; dump reason "stall") but never the kill: a
// long evaluation or checkpoint looks the same. It also dumps the recorders
// once per new crash, with the verdict that stands then. When the verdict's
// stacks are in, it reads where its culprits are (culprit_locations.h).
//
// Threads: the asio thread only. Stack dumps end on the dumper's thread:
// they go to `stacks_done`, which hands them back on the asio thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "supervisor/analysis/hang_detector.h"
#include "supervisor/analysis/hang_report_json.h"
#include "supervisor/incidents/culprit_locations.h"
#include "supervisor/incidents/incident_dumps.h"

namespace xpu_timer::supervisor {

// What the supervisor does after the incident acted, in this order: the
// incident returns it rather than calling back into the poll loop.
struct HangFollowUp {
  // End the job for the hang (SIGTERM through the job controller); "" if not.
  std::string terminate_why;
};

// What identifies each stuck operation of a verdict for its dumps: a verdict
// whose keys were all dumped before is not dumped again (hang_incident.cc).
std::vector<std::string> hang_dump_keys(const HangReport& report);

class HangIncident {
 public:
  // Any thread: a stack dump this incident started ended; the caller hands
  // it back on the asio thread (take_stacks(), then after_stacks()).
  using StacksDone = std::function<void(std::shared_ptr<const StackDumpReport>)>;

  // `dumps` must outlive this; `dump_dir` empty: no hang.json.
  HangIncident(IncidentDumps* dumps, std::string dump_dir, bool kill_on_hang,
               StacksDone stacks_done);

  // Whether `event` is a new hang to tell the other nodes of, before this
  // node dumps it (they may not see it yet): kDetected only. A stall is not:
  // they judge it over the same merged snapshot themselves.
  static bool announced(HangEvent event, const HangReport& report);
  // `parts`: what the hang document holds beside the verdict (mismatches,
  // the coordinator, ...); `stacks` and `timeline` are filled here.
  HangFollowUp on_event(HangEvent event, const HangReport& report, const HangDocumentParts& parts);
  // A stack dump ended (the hang's or a requested one). The verdict's own:
  // rewrites hang.json and learns where its culprits are; true when it did,
  // so that the ranks are judged again now and the places are in the verdict
  // before anything else happens (--on-hang kill ends the job right after
  // its stacks are in).
  bool take_stacks(const std::shared_ptr<const StackDumpReport>& report,
                   const HangDocumentParts& parts);
  // Then: starts a hang's dump that waited, or ends the job for --on-hang
  // kill.
  HangFollowUp after_stacks(const StackDumpReport& report, const HangDocumentParts& parts);
  // `incidents`: the crash tracker's count; `crashed_rank` and `what`: its
  // latest crash ("SIGSEGV at address 0x0 in memmove, from f (train.py:40)");
  // `now`: the verdict that stands. The rings are dumped once per incident:
  // at a new count, unless a crash was dumped less than kCrashIncidentS ago
  // (the same incident's fallout). The dump's document names the crashed
  // rank `crashed` and the others as they are (no hang's words unless a
  // hang stands).
  void after_crashes(uint64_t incidents, int crashed_rank, const std::string& what,
                     const HangReport& now);
  static constexpr double kCrashIncidentS = 30.0;

  // Puts the places of the standing verdict's culprits on this node into
  // `snap`, the poll's snapshot (CulpritLocations::annotate).
  void annotate(Snapshot* snap) const { places_.annotate(snap); }

  // --on-hang changed (POST /config): for hangs declared from now on.
  void set_kill_on_hang(bool kill) { kill_on_hang_ = kill; }

  // A hang has been declared (a stall is not one).
  bool declared() const { return hang_declared_; }
  // The job was (or is being) terminated because of a hang.
  bool killed_job() const { return killed_for_hang_; }

 private:
  void start_stacks(const HangDocumentParts& parts);
  void dump_timelines(const HangDocumentParts& parts);
  void write_file(const HangDocumentParts& parts);
  std::string document(HangDocumentParts parts) const;

  IncidentDumps* const dumps_;
  const std::string dump_dir_;
  bool kill_on_hang_;
  const StacksDone stacks_done_;
  // The verdict hang.json describes, the stack dump it points to, the stuck
  // operations (rank/pid/launch time) whose stacks and rings were taken, and
  // what waits for a running dump to end (--on-hang kill, a queued hang
  // dump). After the kill for a hang no further hang dump starts.
  std::optional<HangReport> hang_;  // the latest hang or stall
  bool hang_declared_ = false;
  std::shared_ptr<const StackDumpReport> stacks_;
  std::vector<std::string> stacks_taken_;
  std::vector<std::string> timelines_taken_;
  std::string timeline_dir_;
  bool stacks_queued_ = false;
  bool kill_after_stacks_ = false;
  bool killed_for_hang_ = false;
  uint64_t crashes_dumped_ = 0;
  double crash_dumped_at_s_ = 0;  // unix seconds of the latest crash dump
  CulpritLocations places_;       // of the verdict in hang_
};

}  // namespace xpu_timer::supervisor
