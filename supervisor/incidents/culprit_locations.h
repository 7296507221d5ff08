// Where the culprits of the standing verdict are on this node: the places
// (stack/user_frames.h) read from the stack files taken for the verdict
// (docs/architecture.md "Hang detection").
//
// Why the verdict does not wait for them: it is published, logged and
// written at once, and completed when the stacks are in. Collecting stops
// every rank (bounded by the dumper's rank timeout, 15 s) and may fail (a
// rank in uninterruptible sleep, ptrace refused); the operator paged at 3 a.m.
// must get the verdict at once, and gets one more line with the places a
// second or so later. The places reach the verdict through the snapshot: the
// poll puts them into the samples of the same processes (annotate), so the
// detector's sentence names them, the verdict counts as changed (one more log
// line, hang.json rewritten) and, in a job of several nodes, the node's
// document carries them to every other node.
//
// Threads: the asio thread only.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/code_frame.h"
#include "supervisor/analysis/hang_detector.h"
#include "supervisor/incidents/stack_dump_report.h"

namespace xpu_timer::supervisor {

// The places of `ranks` read from their stack files in `dump` (only a
// process that is still the one `pids` names, when it names one); one line
// in *errors per file that cannot be read.
std::map<int, std::vector<CodeFrame>> places_in_dump(const StackDumpReport& dump,
                                                     const std::set<int>& ranks,
                                                     const std::map<int, pid_t>& pids,
                                                     std::vector<std::string>* errors);

// Whether a verdict blames the rank: missing, unresponsive or stalled.
bool is_culprit(const RankVerdict& v);

class CulpritLocations {
 public:
  // Reads the places of `verdict`'s culprits from `dump`, the verdict's own
  // stack dump, and keeps them; one warning line per file that cannot be
  // read. Returns how many culprits were found.
  size_t learn(const StackDumpReport& dump, const HangReport& verdict);
  // Forgets every place: the verdict they belong to ended or a new one began.
  void clear() { places_.clear(); }
  // Puts each known place into the sample of the same process (rank and pid).
  void annotate(Snapshot* snap) const;

 private:
  struct Place {
    pid_t pid = 0;
    std::vector<CodeFrame> where;
  };
  std::map<int, Place> places_;
};

}  // namespace xpu_timer::supervisor
