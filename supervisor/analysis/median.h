// The median of a sample, as the slow-rank analysis (straggler.h) takes it:
// the mean of the two middle values of an even count, 0 for none.
#pragma once

#include <algorithm>
#include <vector>

namespace xpu_timer::supervisor {

inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 != 0) return hi;
  return (hi + *std::max_element(v.begin(), v.begin() + static_cast<long>(mid))) / 2;
}

}  // namespace xpu_timer::supervisor
