#include "flamegraph/merged_stacks.h"

#include <algorithm>

#include "common/rank_set.h"
#include "flamegraph/frame_label.h"

namespace xpu_timer::flamegraph {
namespace {

// Above this many children a node's lookup goes through the hash map; below,
// a linear scan of a few integer pairs is faster than hashing.
constexpr size_t kLinearChildren = 8;

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

bool StackMerger::add(const StackFile& file) {
  if (result_.ranks_with_file.contains(file.rank)) return false;
  result_.ranks_with_file.add(file.rank);
  result_.world_size = std::max(result_.world_size, file.world_size);

  global_ids_.resize(file.labels.size());
  for (size_t i = 0; i < file.labels.size(); ++i) {
    global_ids_[i] = result_.labels.intern(file.labels[i].text);
  }
  const uint32_t state = result_.labels.intern(state_frame_label(file.process_state));

  for (int v = 0; v < kViewCount; ++v) {
    MergedView* view = &result_.views[v];
    for (const ThreadStack& thread : file.threads) {
      const std::vector<uint32_t>& frames = thread.frames[v];
      if (frames.empty() && static_cast<View>(v) == View::kPy) continue;
      view->nodes[kRootNode].ranks.add(file.rank);
      uint32_t node = child(view, kRootNode, state, FrameKind::kState);
      view->nodes[node].ranks.add(file.rank);
      for (uint32_t local : frames) {
        node = child(view, node, global_ids_[local], file.labels[local].kind);
        view->nodes[node].ranks.add(file.rank);
      }
      ++view->nodes[node].self;
    }
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
