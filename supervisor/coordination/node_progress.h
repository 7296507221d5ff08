// What one node's supervisor publishes about its ranks for the job's other
// nodes, and the job-wide snapshot built from every node's (docs/
// architecture.md "Jobs of several nodes"). Pure: JSON in and out, no I/O,
// unit-tested on its own.
//
// A node publishes its latest Snapshot (the hang detector's input) with the
// two clocks of the instant it was taken. A reader rebases every time of it
// onto its own CLOCK_MONOTONIC as of that instant: a remote time t, taken
// `d` before the remote snapshot, is placed `d` before the local now. The
// hang detector then runs unchanged over the merged snapshot; every remote
// age is what it was when the remote snapshot was taken, so it is short by
// the snapshot's age (the publication delay: a publish period or two plus
// the store's latency) and never long. A remote rank is thus never declared
// stuck early, whatever the clocks, and at worst that much late. The wall
// clocks only say how old a snapshot is (JobView: which ones to merge) and
// which of two is newer.
//
// In a steady hang only a document's times move (its clocks and its ranks'
// heartbeats), so a node publishes them apart: the document when anything
// else in it changed, and a stamp (its times alone, a few hundred bytes)
// every round. A document's id is a hash of everything but those times; the
// stamp names the id of the document its times belong to, so a reader that
// holds that document (read once) applies the stamp to it and has the
// node's latest snapshot, exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "supervisor/analysis/rank_sample.h"

namespace xpu_timer::supervisor {

struct NodeProgress {
  int node = -1;  // torchrun's group rank of the node's ranks
  std::string host;
  int world_size = 0;  // of the job, as the node's ranks registered it
  Snapshot snapshot;   // the node's own ranks, on its own clocks
  uint64_t doc = 0;    // set by parse_node_progress: the document's id
};

// The times of one node's snapshot: what changes in a steady hang.
struct NodeStamp {
  int node = -1;
  uint64_t doc = 0;  // the id of the document these times belong to
  uint64_t now_ns = 0;
  double now_unix_s = 0;
  std::vector<uint64_t> heartbeat_ns;  // one per rank, in the document's order
};

// The id of `p`'s document: a hash of its text without the times a stamp
// carries (p.doc is not read). Equal ids: equal documents but for the times.
uint64_t node_document_id(const NodeProgress& p);
// A hash of what a document says of the node's ranks but their progress:
// which ranks, their processes and communicators. What a quiet job's nodes
// need of each other (progress_exchange.h): a document is put in quiet
// times only when this changed.
uint64_t node_shape_id(const NodeProgress& p);
// The JSON text a node puts in the store, carrying its id.
std::string node_progress_text(const NodeProgress& p);
// Parses another node's text. False with one line for anything that is not
// such a document (a value written by something else, a truncated one).
bool parse_node_progress(const std::string& text, NodeProgress* out, std::string* error);

// The stamp of `p` (the id of its document and its times), as JSON text.
std::string node_stamp_text(const NodeProgress& p);
// Parses another node's stamp; false with one line otherwise.
bool parse_node_stamp(const std::string& text, NodeStamp* out, std::string* error);
// Puts the stamp's times in `p`, a document of the same node read earlier.
// False (and `p` unchanged) when the stamp belongs to another document: the
// reader lacks the document the node published last.
bool apply_node_stamp(const NodeStamp& stamp, NodeProgress* p);

// The job-wide snapshot: `local` (this node's ranks) and the ranks of every
// node in `others` that is not `local_node`, rebased onto local's clocks
// (but for RankSample::read_ns: the remote snapshot's now_ns), sorted by rank. A rank two nodes
// claim keeps the local one, else the most recent. With `world_size` > 0, every rank of [0,
// world_size) that no node reports is added as never registered.
Snapshot merge_job_snapshot(const Snapshot& local, int local_node,
                            const std::vector<NodeProgress>& others, int world_size);

// Whether this node needs the job's other nodes now: one of its ranks has an
// operation in flight launched more than half the hang timeout ago (a hang
// would be declared within the other half), or `detector_wants`
// (HangDetector::wants_fresh_news: a verdict stands, or this node's ranks
// stood still for half the stall time). Until then the nodes exchange their
// documents only rarely (job_view.h).
bool wants_job_view(const Snapshot& local, double timeout_s, bool detector_wants);

}  // namespace xpu_timer::supervisor
