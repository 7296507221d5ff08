#include "flamegraph/merged_stacks.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "common/rank_set.h"
#include "flamegraph/frame_label.h"
#include "flamegraph/own_threads.h"

namespace xpu_timer::flamegraph {
namespace {

// Above this many children a node's lookup goes through the hash map; below,
// a linear scan of a few integer pairs is faster than hashing.
constexpr size_t kLinearChildren = 8;

// What a native frame's label says of its offset: "0x2a1f0" (into buf, as the
// stack file writes it) for an unknown function, where it is all there is to
// tell frames apart; "" for a known one, and for 0 (no module).
std::string_view label_offset(const stack::NativeFrame& f, char (&buf)[24]) {
  if (f.offset == 0 || !(f.func.empty() || f.func == "??")) return {};
  const int n = std::snprintf(buf, sizeof(buf), "0x%" PRIx64, f.offset);
  return std::string_view(buf, static_cast<size_t>(n));
}

void sort_children(MergedView* view, const StringInterner& labels) {
  for (MergedNode& n : view->nodes) {
    std::sort(n.children.begin(), n.children.end(), [&](const auto& a, const auto& b) {
      return labels.text(a.first) < labels.text(b.first);
    });
  }
}

}  // namespace

StackMerger::StackMerger() {
  for (int v = 0; v < kViewCount; ++v) {
    result_.views[v].view = static_cast<View>(v);
    result_.views[v].nodes.emplace_back();  // root
  }
}

uint32_t StackMerger::child(MergedView* view, uint32_t parent, uint32_t label, FrameKind kind) {
  auto& wide = wide_children_[static_cast<int>(view->view)];
  const uint64_t key = (uint64_t{parent} << 32) | label;
  {
    const auto& kids = view->nodes[parent].children;
    if (kids.size() <= kLinearChildren) {
      for (const auto& [l, node] : kids) {
        if (l == label) return node;
      }
    } else {
      auto it = wide.find(key);
      if (it != wide.end()) return it->second;
    }
  }
  const auto id = static_cast<uint32_t>(view->nodes.size());
  MergedNode node;
  node.label = label;
  node.parent = parent;
  node.depth = view->nodes[parent].depth + 1;
  node.kind = kind;
  view->nodes.push_back(std::move(node));  // may move nodes: re-index below
  auto& kids = view->nodes[parent].children;
  kids.emplace_back(label, id);
  if (kids.size() == kLinearChildren + 1) {
    for (const auto& [l, n] : kids) wide.emplace((uint64_t{parent} << 32) | l, n);
  } else if (kids.size() > kLinearChildren + 1) {
    wide.emplace(key, id);
  }
  return id;
}

void StackMerger::append_label(FrameKind kind) {
  path_.emplace_back(result_.labels.intern(label_), kind);
}

void StackMerger::add_path(View v, uint32_t rank, uint32_t state) {
  MergedView* view = &result_.views[static_cast<int>(v)];
  view->nodes[kRootNode].ranks.add(rank);
  uint32_t node = child(view, kRootNode, state, FrameKind::kState);
  view->nodes[node].ranks.add(rank);
  for (const auto& [label, kind] : path_) {
    node = child(view, node, label, kind);
    view->nodes[node].ranks.add(rank);
  }
  ++view->nodes[node].self;
  view->rank_leaves[rank].push_back(node);
}

bool StackMerger::add(const stack::ProcessStack& stack) {
  if (stack.rank < 0 || stack.rank >= stack.world_size) return false;
  const auto rank = static_cast<uint32_t>(stack.rank);
  if (result_.ranks_with_file.contains(rank)) return false;
  result_.ranks_with_file.add(rank);
  result_.world_size = std::max(result_.world_size, static_cast<uint32_t>(stack.world_size));
  for (MergedView& view : result_.views) {
    if (view.rank_leaves.size() < result_.world_size) view.rank_leaves.resize(result_.world_size);
  }
  const uint32_t state = result_.labels.intern(state_frame_label(stack.process_state));

  // Stack files list frames innermost first; the merge walks from the root.
  // Our own background threads: one folded frame each (own_threads.h).
  std::vector<bool> own(stack.threads.size());
  for (size_t t = 0; t < own.size(); ++t) own[t] = is_xpu_timer_thread(stack.threads[t]);
  auto add_own_thread = [&](View v) {
    path_.clear();
    label_ = kOwnThreadLabel;
    append_label(FrameKind::kState);
    add_path(v, rank, state);
  };

  char hex[24];
  for (size_t t = 0; t < own.size(); ++t) {
    const stack::ThreadStack& thread = stack.threads[t];
    if (own[t]) {
      add_own_thread(View::kCpp);
      continue;
    }
    path_.clear();
    for (auto f = thread.native.rbegin(); f != thread.native.rend(); ++f) {
      format_native_frame_label(&label_, f->func, f->module, f->file, f->line,
                                label_offset(*f, hex), f->inlined);
      append_label(FrameKind::kNative);
    }
    add_path(View::kCpp, rank, state);
  }
  for (size_t t = 0; t < own.size(); ++t) {
    const stack::ThreadStack& thread = stack.threads[t];
    if (thread.python.empty()) continue;  // the py view shows Python threads only
    if (own[t]) {
      add_own_thread(View::kPy);
      continue;
    }
    path_.clear();
    for (auto f = thread.python.rbegin(); f != thread.python.rend(); ++f) {
      format_python_frame_label(&label_, f->func, f->file, f->line);
      append_label(FrameKind::kPython);
    }
    add_path(View::kPy, rank, state);
  }
  for (size_t t = 0; t < own.size(); ++t) {
    const stack::ThreadStack& thread = stack.threads[t];
    if (own[t]) {
      add_own_thread(View::kMixed);
      continue;
    }
    path_.clear();
    for (auto f = thread.mixed.rbegin(); f != thread.mixed.rend(); ++f) {
      if (f->python) {
        format_python_frame_label(&label_, f->func, f->file, f->line);
      } else {
        format_native_frame_label(&label_, f->func, f->module, f->file, f->line, {}, false);
      }
      append_label(f->python ? FrameKind::kPython : FrameKind::kNative);
    }
    add_path(View::kMixed, rank, state);
  }
  return true;
}

MergeResult StackMerger::finish() {
  const uint32_t world = result_.world_size;
  for (MergedView& view : result_.views) {
    // Parents precede children, so one reverse pass accumulates totals.
    for (size_t i = view.nodes.size(); i-- > 0;) {
      MergedNode& n = view.nodes[i];
      n.total += n.self;
      if (i != kRootNode) view.nodes[n.parent].total += n.total;
    }
    sort_children(&view, result_.labels);
    for (size_t i = 1; i < view.nodes.size(); ++i) {
      MergedNode& n = view.nodes[i];
      n.text = result_.labels.text(n.label);
      n.text += '@';
      n.text += fold_ranks(n.ranks.to_vector());
      n.text += '|';
      // Leak ranks include ranks that have no file at all: the complement is
      // taken over the whole world, not over the files that were read.
      n.text += fold_ranks(n.ranks.complement(world));
    }
  }
  return std::move(result_);
}

}  // namespace xpu_timer::flamegraph
