// Rank-merged stacks: per view, a prefix tree of every thread stack of every
// rank (outermost frame first, under a root frame naming the process state).
// Each node knows the ranks passing through it and how many stacks pass
// through it or end in it.
//
// Sample counting: one sample per (rank, thread) stack. A node's `total` is the
// number of thread stacks of all ranks passing through it, `self` those ending
// there, so a frame's width is "how many threads, over all ranks, are here":
// the 1024 main threads blocked in ncclAllReduce make one wide frame, the one
// missing rank's main thread a narrow one beside it whose rank set names it.
// In the py view only threads with Python frames count; in cpp and mixed a
// thread whose stack could not be read still counts under its state frame.
// Our own background threads count as one frame each (own_threads.h).
//
// Frame texts (frame_label.h) are made here, per frame, into one reused buffer
// and interned at once, so that the merge compares integers and a 1024-rank
// dump formats no string it does not need.
//
// StackMerger is fed on one thread (the loader's sink) and is not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flamegraph/rank_bits.h"
#include "flamegraph/stack_view.h"
#include "flamegraph/string_interner.h"
#include "stack/stack_types.h"

namespace xpu_timer::flamegraph {

constexpr uint32_t kRootNode = 0;  // the synthetic "all" node of each view

struct MergedNode {
  uint32_t label = 0;  // id in MergeResult::labels; unused for the root
  uint32_t parent = 0;
  uint32_t depth = 0;  // root 0, state frames 1, ...
  FrameKind kind = FrameKind::kState;
  RankBits ranks;
  uint64_t self = 0;
  uint64_t total = 0;
  // (label, node) pairs; sorted by label text after StackMerger::finish().
  std::vector<std::pair<uint32_t, uint32_t>> children;
  // `func@source@stuck_ranks|leak_ranks`, filled by finish().
  std::string text;
};

struct MergedView {
  View view = View::kCpp;
  std::vector<MergedNode> nodes;  // nodes[kRootNode] is the root; parents precede children
  // By rank: the node each of its thread stacks ends in, in file order (the
  // main thread first). What culprits.h needs to tell one rank's stacks from
  // the others' without going back to the files: 4 bytes per thread.
  std::vector<std::vector<uint32_t>> rank_leaves;
};

struct MergeResult {
  uint32_t world_size = 0;  // max of the files' world_size
  RankBits ranks_with_file;
  StringInterner labels;
  MergedView views[kViewCount];
  const MergedView& view(View v) const { return views[static_cast<int>(v)]; }
};

class StackMerger {
 public:
  StackMerger();
  // One rank's stacks, as read from its stack file. False (and nothing
  // merged) when the same rank was already added or the rank is not in
  // [0, world_size).
  bool add(const stack::ProcessStack& stack);
  // Computes totals, sorts children and formats frame texts. Call once.
  MergeResult finish();

 private:
  uint32_t child(MergedView* view, uint32_t parent, uint32_t label, FrameKind kind);
  void append_label(FrameKind kind);  // interns label_ and appends it to path_
  // One thread stack (path_, root first) of `rank` under its state frame.
  void add_path(View v, uint32_t rank, uint32_t state);

  MergeResult result_;
  // (parent << 32 | label) -> child, used for nodes with many children.
  std::unordered_map<uint64_t, uint32_t> wide_children_[kViewCount];
  // Scratch, reused for every frame and thread: no allocation once warm.
  std::string label_;
  std::vector<std::pair<uint32_t, FrameKind>> path_;
};

}  // namespace xpu_timer::flamegraph
