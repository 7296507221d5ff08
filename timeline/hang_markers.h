// Which ranks a hang left behind, and where each stopped: the facts the trace
// marks so that, at a glance, the stuck ranks' pending collective and the
// missing rank's last completed one stand out.
//
// From hang.json when a dump folder has one (the supervisor's verdict, which
// may well be "no hang": then nothing is marked); otherwise inferred from the dumps alone: a rank
// that is a member of a communicator (it has records of it) but never issued the sequence number
// that another rank is still waiting in is missing from that collective.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "timeline/dump_loader.h"

namespace xpu_timer::timeline {

struct MissingMark {
  int rank = -1;
  const RankTimeline* timeline = nullptr;                // null: no dump of that rank
  const recorder::RecordData* last_completed = nullptr;  // where to draw the mark
  std::string name;                   // "rank 2 missing: last completed AllReduce #5"
  std::string reason;                 // hang.json's reason, or how it was inferred
  std::optional<uint64_t> comm, seq;  // the collective it is missing from, when known
};

struct HangMarks {
  std::vector<MissingMark> missing;  // one per rank, by rank
  // (rank, comm, seq) of the collectives hang.json names as stuck.
  std::set<std::tuple<int, uint64_t, uint64_t>> stuck;
  // rank -> what ended it, of the ranks a crash dump's document names as
  // crashed ("SIGSEGV at address 0x0 in memmove, from crash (train.py:40)").
  std::map<int, std::string> crashed;
  bool from_verdict = false;  // a hang.json was read; false: inferred from the dumps
};

HangMarks find_hang_marks(const LoadedDumps& dumps);

// True for an operation that had not completed when its ring was dumped.
bool is_pending(const recorder::RecordData& r);

}  // namespace xpu_timer::timeline
