// Folded stacks in flamegraph.pl's format, one line per distinct stack:
//   frame;frame;...;frame count
// root (process state) first, each frame `func@source@stuck_ranks|leak_ranks`,
// count = thread stacks (over all ranks) that end in the last frame. Lines come
// in depth-first order with siblings sorted by label, so output is stable.
#pragma once

#include <string>

#include "flamegraph/merged_stacks.h"

namespace xpu_timer::flamegraph {

std::string folded_stacks(const MergedView& view);

}  // namespace xpu_timer::flamegraph
