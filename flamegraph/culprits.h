// The culprits of a merged view: the ranks a flame graph must show where they
// can be seen, however many ranks the job has (docs/architecture.md "Merged
// stacks"). With a hang verdict they are the ranks it blames: missing, stuck
// in another operation than the others, the odd ones of a collective
// mismatch, unresponsive, exited. Without one (or when it names nobody, as a
// stall), they are the ranks whose stacks differ from the majority's.
//
// "Differ" is judged per thread stack with line numbers dropped: a stack held
// by at most an eighth of the ranks (at least one rank; never with fewer than
// three ranks, where the odd one cannot be told) sets its ranks apart, so a
// proxy thread spinning on another line of the same function, or ranks split
// between two lines of ncclAllReduce, are not culprits. For a rank the verdict
// names, the stacks shown are those held by at most an eighth of the other
// ranks; when none is, those that differ by a line number; when none does
// either, its first (main) thread.
//
// Ranks with the same role and the same distinctive stacks form one group
// ("ranks 100-199 missing"), so 1,024 ranks cost one group, not 1,024.
// Pure function of the view; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flamegraph/hang_verdict.h"
#include "flamegraph/merged_stacks.h"

namespace xpu_timer::flamegraph {

// What a rank is in this graph; the order is the order roles are listed in.
enum class RankRole : uint8_t {
  kStuck,           // a victim: waits for the culprits
  kStuckElsewhere,  // culprits from here down
  kMissing,
  kUnresponsive,
  kExited,
  kMismatched,
  kDiffers,  // no verdict: its stacks differ from the majority's
  kNoStack,  // no verdict: no stack file at all
  kOther,
};
constexpr int kRoleCount = 9;
// "stuck", "stuck elsewhere", "missing", ..., "other".
const char* role_name(RankRole role);

struct CulpritThread {
  uint32_t leaf = 0;      // the node the thread stack ends in
  uint32_t diverges = 0;  // its outermost frame the others do not share
};

struct CulpritGroup {
  RankRole role = RankRole::kOther;
  std::vector<int> ranks;  // ascending
  // The stacks that set them apart, distinct, in the first rank's thread
  // order; empty: they have no stack in this view.
  std::vector<CulpritThread> threads;
  // No stack of theirs differs from the others': their first thread is shown.
  bool like_others = false;
  // The frame that says where the first thread is (a Python frame, else one
  // with a line number, else the innermost); kRootNode without threads.
  uint32_t where = kRootNode;
};

struct Culprits {
  bool from_verdict = false;  // false: the ranks that differ from the majority
  uint32_t view_ranks = 0;    // ranks with a stack in the view
  std::vector<CulpritGroup> groups;  // missing first, then by role and first rank
  std::vector<RankRole> roles;       // by rank, world size long

  bool empty() const { return groups.empty(); }
  RankRole role(int rank) const;
  bool is_culprit(int rank) const;
  // "stuck 0-1/3, missing 2, other 4" ("none" for no rank).
  std::string describe(const std::vector<int>& ranks) const;
};

// `no_file`: the ranks of the world without a stack file (merge-level
// knowledge the view lacks). `verdict` may be null.
Culprits find_culprits(const MergedView& view, const StringInterner& labels, uint32_t world_size,
                       const std::vector<int>& no_file, const HangVerdict* verdict);

// The graph's title with culprits, in at most `max_chars` characters:
// "rank 2 missing, in stuck_in_host_code (/job/sim_trainer.py:88)", then
// "; 2 more groups below" when there are more. "" without culprits.
std::string culprit_headline(const Culprits& culprits, const MergedView& view,
                             const StringInterner& labels, long max_chars);

// "rank 2" or "ranks 0-3/6".
std::string ranks_phrase(const std::vector<int>& ranks);

}  // namespace xpu_timer::flamegraph
