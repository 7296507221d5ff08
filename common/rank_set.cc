#include "common/rank_set.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "common/parse_number.h"

namespace xpu_timer {

std::string fold_ranks(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += '/';
    out += std::to_string(ranks[i]);
    if (j > i) out += '-' + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

namespace {
// A rank: digits only, at most 9 of them (no sign, no overflow of int).
bool parse_rank(const std::string& s, int* out) {
  if (s.size() > 9) return false;
  const std::optional<uint64_t> v = parse_uint(s);
  if (!v) return false;
  *out = static_cast<int>(*v);
  return true;
}
}  // namespace

std::optional<std::vector<int>> parse_rank_set(const std::string& text) {
  std::vector<int> ranks;
  if (text.empty()) return ranks;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t slash = text.find('/', pos);
    if (slash == std::string::npos) slash = text.size();
    const std::string part = text.substr(pos, slash - pos);
    const size_t dash = part.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string::npos) {
      if (!parse_rank(part, &lo)) return std::nullopt;
      hi = lo;
    } else if (!parse_rank(part.substr(0, dash), &lo) || !parse_rank(part.substr(dash + 1), &hi) ||
               hi < lo) {
      return std::nullopt;
    }
    for (int r = lo; r <= hi; ++r) ranks.push_back(r);
    pos = slash + 1;
  }
  return ranks;
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) {
    if (!out.empty()) out += ',';
    out += std::to_string(r);
  }
  return out;
}

}  // namespace xpu_timer
