// What the supervisor does about a collective mismatch (docs/architecture.md
// "Collective consistency"): one log line, the ranks' flight recorders and
// stacks, the entry kept for GET /hang and <dump-dir>/mismatch.json; and
// where the odd ranks of this node are (`where`, in the entry, mismatch.json
// and one more log line): the Python line that issued the odd collective
// when the rank's flight recorder kept it (inject/call_sites.h), at once;
// otherwise, once the stacks are in, the rank's innermost frame of the
// user's and its caller (as for a hang's culprits: culprit_locations.h).
//
// Why the stacks' places come second: collecting stops every rank and may
// take up to the dumper's rank timeout; the mismatch is reported at once. An
// odd rank placed by its stacks is named where it is then (they are taken
// within a poll or two of the mismatch; the job is never held for them),
// which may be past the line that issued the collective.
//
// Threads: the asio thread only; the stacks' end comes back through
// `stacks_done` (supervisor_events.h: MismatchStacksDone).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/code_frame.h"
#include "supervisor/analysis/collective_check.h"
#include "supervisor/incidents/incident_dumps.h"

namespace xpu_timer::supervisor {

// The odd ranks' places by rank.
using RankPlaces = std::map<int, std::vector<CodeFrame>>;

// Where the entries of the mismatches reported so far are kept
// (CollectiveMonitor, which serves them on GET /hang).
class MismatchLedger {
 public:
  virtual ~MismatchLedger() = default;
  // Keeps the mismatch's entry (its mismatch.json entry, with the dump
  // folders); returns every kept entry, for mismatch.json.
  virtual nlohmann::json remember(const Mismatch& m, nlohmann::json entry) = 0;
  // Adds the odd ranks' places to the kept entry; returns every kept entry.
  virtual nlohmann::json locate(const Mismatch& m, const RankPlaces& places) = 0;
};

// The stacks a mismatch's dump took, handed back to on_stacks_done().
struct MismatchStacks {
  Mismatch mismatch;
  std::shared_ptr<const StackDumpReport> report;
};

class MismatchIncident {
 public:
  // Any thread: the stack dump of a mismatch ended; the caller hands it
  // back on the asio thread (on_stacks_done).
  using StacksDone = std::function<void(MismatchStacks)>;

  // `dumps` and `ledger` must outlive this; `dump_dir` empty: no mismatch.json.
  MismatchIncident(IncidentDumps* dumps, std::string dump_dir, MismatchLedger* ledger,
                   StacksDone stacks_done);

  // A mismatch, reported once per collective (CollectiveMonitor).
  void on_mismatch(const Mismatch& m);
  // The mismatch's stacks are in: the places of its odd ranks found in them.
  void on_stacks_done(const Mismatch& m, const StackDumpReport& dump);

 private:
  void write_file(const nlohmann::json& all) const;
  // The odd ranks placed by the line that issued their collective.
  static RankPlaces issued_places(const Mismatch& m);

  IncidentDumps* const dumps_;
  const std::string dump_dir_;
  MismatchLedger* const ledger_;
  const StacksDone stacks_done_;
};

// "collective mismatch #6 on comm 1a2b3c4d5e6f7a8b: rank 3 (odd) in f (a.py:9)
// <- g (a.py:20)"; odd ranks at the same place share one clause ("ranks 3,5
// (odd) in ..."), clauses joined by "; ". "" without places.
std::string mismatch_where_line(const Mismatch& m, const RankPlaces& places);

}  // namespace xpu_timer::supervisor
