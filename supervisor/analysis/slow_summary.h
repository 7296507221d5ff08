// Slow ranks across nodes. Each node judges its own ranks' arrivals (one
// clock per node: analysis/straggler.h) and publishes a window summary,
// <root>/slow/<node> in the coordination store, every few seconds: its
// stragglers, and per communicator and rank the median time its ranks spent
// in a collective (from arrival to end). Nothing per collective crosses
// nodes: a summary is a few hundred bytes per communicator.
//
// The job-wide verdict, on every node, is the union of the nodes' stragglers,
// each kept only if no rank of another node spent less time in that
// communicator's collectives (a collective ends about together on every
// member, so the last to arrive spends the least time in it; the clocks of
// the nodes never need to agree). Pure: no threads, sockets or files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "supervisor/analysis/straggler.h"

namespace xpu_timer::supervisor {

constexpr int kSlowSummaryFormat = 1;

struct NodeSlowSummary {
  int node = -1;
  double unix_s = 0;
  std::vector<Straggler> stragglers;
  // comm -> rank -> (collectives, median seconds in a collective)
  std::map<uint64_t, std::map<int, std::pair<size_t, double>>> time_in_collective;
};

NodeSlowSummary node_slow_summary(const SlowReport& report, int node, double unix_s);
std::string slow_summary_text(const NodeSlowSummary& s);
// A summary read from the store: false with one line in `error` when it is
// not one (ranks outside [0, world_size), more than kMaxEntries of
// anything, a straggler of another node).
bool parse_slow_summary(const std::string& text, int world_size, NodeSlowSummary* out,
                        std::string* error);
constexpr size_t kMaxSlowSummaryEntries = 4096;

// A node's summary older than this (its supervisor gone) no longer counts.
constexpr double kSlowSummaryMaxAgeS = 30;

// The job-wide verdict: `mine` (this node's report, its ranks' lateness kept)
// with the stragglers of every node's summary (this node's included), each
// confirmed against the other nodes' time in its communicator.
SlowReport merge_slow_reports(const SlowReport& mine, const std::vector<NodeSlowSummary>& nodes);

// What a node needs of every node's summary for merge_slow_reports to
// confirm the same stragglers as over the whole summaries, however many
// nodes: each node's stragglers with their own time, and in each
// communicator that holds a straggler the rank that spent the least time in
// it (if any rank refutes a straggler, that one does). The
// job's leader sends these to the other nodes instead of every summary
// (coordination/slow_summary_exchange.h); nodes left with nothing are left
// out. A node merging them with its own whole summary gets the same
// stragglers, for the stragglers the summaries held.
std::vector<NodeSlowSummary> reduce_slow_summaries(const std::vector<NodeSlowSummary>& nodes);

}  // namespace xpu_timer::supervisor
