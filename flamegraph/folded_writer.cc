#include "flamegraph/folded_writer.h"

#include <utility>
#include <vector>

namespace xpu_timer::flamegraph {

std::string folded_stacks(const MergedView& view) {
  std::string out;
  std::string path;  // "frame;frame;..." of the node being visited
  // (node, length of `path` before this node was appended)
  std::vector<std::pair<uint32_t, size_t>> stack;
  const auto& root = view.nodes[kRootNode];
  for (auto it = root.children.rbegin(); it != root.children.rend(); ++it) {
    stack.emplace_back(it->second, 0);
  }
  while (!stack.empty()) {
    const auto [id, prefix_len] = stack.back();
    stack.pop_back();
    const MergedNode& n = view.nodes[id];
    path.resize(prefix_len);
    if (!path.empty()) path += ';';
    path += n.text;
    if (n.self > 0) {
      out += path;
      out += ' ';
      out += std::to_string(n.self);
      out += '\n';
    }
    const size_t len = path.size();
    for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) {
      stack.emplace_back(it->second, len);
    }
  }
  return out;
}

}  // namespace xpu_timer::flamegraph
