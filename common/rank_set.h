// Folding of rank lists into the compact text xpu-timer users know:
// {0,1,2,3,6} -> "0-3/6". Used by the supervisor's hang report and the
// flame-graph merger. Pure functions, any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace xpu_timer {

// Sorted, de-duplicated ranges joined by '/'; "" for an empty set.
std::string fold_ranks(std::vector<int> ranks);

// Inverse of fold_ranks; nullopt on malformed text ("1-", "a", "3-1").
std::optional<std::vector<int>> parse_rank_set(const std::string& text);

// "0,1,3" style list for sentences ("ranks 0,1,3 stuck ...").
std::string join_ranks(const std::vector<int>& ranks);

}  // namespace xpu_timer
