#include "common/status_page_layout.h"

#include <cstring>

namespace xpu_timer::proto {

// 10 us * 2^i for i = 0..22, then +Inf: covers a tiny kernel to a 40 s collective.
const double kHistUpperBoundsSeconds[kHistBuckets] = {
    10e-6,     20e-6,   40e-6,    80e-6,    160e-6,   320e-6,   640e-6,    1.28e-3,
    2.56e-3,   5.12e-3, 10.24e-3, 20.48e-3, 40.96e-3, 81.92e-3, 163.84e-3, 327.68e-3,
    655.36e-3, 1.31072, 2.62144,  5.24288,  10.48576, 20.97152, 41.94304,  1e300};

int hist_bucket_for_ns(uint64_t ns) {
  uint64_t bound_ns = 10000;  // 10 us
  for (int i = 0; i < kHistBuckets - 1; ++i, bound_ns *= 2) {
    if (ns <= bound_ns) return i;
  }
  return kHistBuckets - 1;
}

size_t clean_name_field(char* name, size_t bytes) {
  const void* nul = std::memchr(name, '\0', bytes);
  const size_t n = nul != nullptr ? static_cast<size_t>(static_cast<const char*>(nul) - name) : 0;
  for (size_t j = 0; j < n; ++j) {
    const auto c = static_cast<unsigned char>(name[j]);
    if (c < 0x20 || c >= 0x7f) name[j] = '?';
  }
  std::memset(name + n, 0, bytes - n);
  return n;
}

}  // namespace xpu_timer::proto
