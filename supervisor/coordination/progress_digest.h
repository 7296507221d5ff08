// The leader's digests, so that what every node reads costs the store
// O(nodes) and not O(nodes²) (docs/architecture.md "Jobs of several
// nodes"): one summary of every node's stamp (progress_exchange.h), and one
// of the slow-rank summaries (at the end). Pure: JSON in and out, no I/O.
//
// One node, the leader (elected by a key created under its lease), reads
// every stamp as before and puts one digest; the others read the digest
// instead of the stamps. A digest does not repeat the stamps of the nodes
// whose news is plain, which in a steady hang is nearly all of them: a
// stamp at most kPlainLagS older than the digest, every rank's heartbeat at
// most kPlainBeatS old, and clocks that kept their pairing since the node's
// document (the monotonic and the wall clock advanced alike, within
// kClockSlackS). For those the digest says only "fresh as of fresh_unix_s",
// with a hash of which nodes and documents that covers; a reader whose own
// documents hash the same rebuilds each plain node's stamp from its document
// (plain_stamp): times as of fresh_unix_s (the oldest plain stamp), every
// heartbeat current. A rebuilt stamp is thus older than the true one by up
// to kPlainLagS + kClockSlackS, and its heartbeats younger by up to
// kPlainBeatS: ages short, never long, as node_progress.h requires. Every
// other stamp (a heartbeat that stopped, a late node, the leader's own) is
// carried whole.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "supervisor/coordination/node_progress.h"

namespace xpu_timer::supervisor {

struct ProgressDigest {
  int leader = -1;                  // the node that made it
  double now_unix_s = 0;            // the leader's wall clock when it made it
  double fresh_unix_s = 0;          // every plain node's stamp is at least this recent
  uint64_t plain_hash = 0;          // plain_nodes_hash() of the plain nodes
  std::vector<std::string> stamps;  // the other stamps, as their nodes put them
};

constexpr double kPlainLagS = 2;
constexpr double kPlainBeatS = 2;
constexpr double kClockSlackS = 0.1;

// A hash of (node, document id) pairs.
uint64_t plain_nodes_hash(const std::map<int, uint64_t>& docs);
// Whether `st`, its node's stamp for document `d`, may be told by a digest
// made at `digest_unix_s` without being carried.
bool stamp_is_plain(const NodeStamp& st, const NodeProgress& d, double digest_unix_s);
// The stamp a digest stands for, for `d` a plain node's document.
NodeStamp plain_stamp(const NodeProgress& d, double fresh_unix_s);

std::string progress_digest_text(const ProgressDigest& d);
// Parses a digest read from the store; false with one line otherwise.
bool parse_progress_digest(const std::string& text, ProgressDigest* out, std::string* error);

// The leader's other digest, of the slow-rank summaries
// (slow_summary_exchange.h): the texts of the reduced summaries
// (reduce_slow_summaries, slow_summary_text), by node.
struct SlowDigest {
  int leader = -1;
  double now_unix_s = 0;
  std::map<int, std::string> summaries;
};
std::string slow_digest_text(const SlowDigest& d);
// Parses a digest read from the store (at most `node_count` nodes, each
// within it); false with one line otherwise.
bool parse_slow_digest(const std::string& text, int node_count, SlowDigest* out,
                       std::string* error);

}  // namespace xpu_timer::supervisor
