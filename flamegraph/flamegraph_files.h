// Writes the viewer's outputs into a folder: for each view (cpp, py, mixed)
// the folded text `<view>_stack` and the SVG `<view>_stack.svg`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "flamegraph/hang_verdict.h"
#include "flamegraph/merged_stacks.h"

namespace xpu_timer::flamegraph {

// *written lists the paths written; false with *error naming the file and errno.
// With a hang verdict the SVGs name it and show its culprits; without one,
// the ranks whose stacks differ from the majority's (culprits.h).
bool write_flamegraphs(const MergeResult& merged, const std::string& out_dir,
                       std::vector<std::string>* written, std::string* error,
                       const std::optional<HangVerdict>& verdict = std::nullopt);

}  // namespace xpu_timer::flamegraph
