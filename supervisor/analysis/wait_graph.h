// Who waits for whom in a hang, across communicators, and the roots the
// waits lead to: the ranks (or the cycle of ranks) that everybody stuck is
// ultimately waiting on. Pure, part of the hang detector's classification
// (hang_detector.h): it reads the snapshot's communicator slots and the
// verdicts of pass 1-3, and fills RankVerdict::waits_for and
// HangReport::roots.
//
// The edges. A rank stuck in collective S of communicator C waits for every
// member of C that has not reached S: a member whose page says it issued
// fewer than S collectives on C, or issued S and never started it on its GPU,
// or that exited or stopped answering. Members stuck in S with it have
// arrived: no edge. Members whose node is not heard from (silent, as of
// their node's last news) are waited for only when no other member is. A member stuck in another
// collective (of another communicator) is itself waiting: following its edges leads further.
//
// The roots. Following the edges from the stuck ranks ends at ranks that wait
// for nobody: missing (in no collective, behind, not started), exited,
// unresponsive, never registered, silent; or a stuck rank whose collective has every
// member in it (the collective itself does not complete: a link, NCCL), or
// whose operation is no collective (a GEMM that never ends). Stuck ranks that
// reach none of those wait on each other in a cycle: a deadlock by order (A
// waits for B in one communicator while B waits for A in another); each cycle
// is a root.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "supervisor/analysis/rank_sample.h"

namespace xpu_timer::supervisor {

struct HangReport;

// One wait: the rank waited for, and the collective the waiter is in.
struct WaitEdge {
  int rank = 0;
  uint64_t comm_hash = 0;
  std::string comm_name;  // "" = unknown
  uint64_t seq = 0;
};

enum class RootKind { kRank, kCollective, kCycle };
const char* root_kind_name(RootKind k);

struct HangRoot {
  RootKind kind = RootKind::kRank;
  // kRank: one rank; kCollective: the stuck ranks of that collective; kCycle:
  // the ranks of the cycle.
  std::vector<int> ranks;
  // Who waits on it: waiters[0] wait on a rank of `ranks` directly,
  // waiters[1] on a rank of waiters[0], and so on (each rank once, at the
  // first level it appears; a rank waiting on two roots is the first's).
  std::vector<std::vector<int>> waiters;
};

// Whether `op` is an NCCL operation (one with a communicator and sequence number).
bool is_collective_op(const proto::OpRef& op);

// The slot of `comm_hash` on a rank's page; nullptr when the page has none or
// only one whose hash is local to the rank (it cannot name a communicator
// shared with others).
const proto::CommSlot* comm_slot_of(const RankSample& s, uint64_t comm_hash);

// Fills report->ranks[i].waits_for and report->roots (report->ranks in the
// order of snap.ranks). Roots in order: ranks and collectives by their first
// rank, then cycles.
void build_wait_graph(const Snapshot& snap, HangReport* report);

// The verdict led by its roots, then who waits on them level by level
// (hang_sentence in hang_detector.h says when).
std::string roots_sentence(const HangReport& report, bool with_durations);

// Whether `rank` is one of the report's roots (a culprit, whatever its state).
bool is_root_rank(const HangReport& report, int rank);

// Whether the graph needs more than one communicator or one level to be told
// (then the verdict leads with its roots: hang_sentence).
bool wait_graph_is_deep(const HangReport& report);

}  // namespace xpu_timer::supervisor
