// Writes the viewer's outputs into a folder: for each view (cpp, py, mixed)
// the folded text `<view>_stack` and the SVG `<view>_stack.svg`.
#pragma once

#include <string>
#include <vector>

#include "flamegraph/merged_stacks.h"

namespace xpu_timer::flamegraph {

// *written lists the paths written; false with *error naming the file and errno.
bool write_flamegraphs(const MergeResult& merged, const std::string& out_dir,
                       std::vector<std::string>* written, std::string* error);

}  // namespace xpu_timer::flamegraph
