#include "supervisor/metrics/metrics_rate_window.h"

#include <cstddef>

namespace xpu_timer::supervisor {
namespace {

bool went_backwards(const RateWindow::Totals& now, const RateWindow::Totals& then) {
  return now.count < then.count || now.sum_ns < then.sum_ns || now.sum_bytes < then.sum_bytes ||
         now.sum_flops < then.sum_flops;
}

}  // namespace

RateWindow::Totals RateWindow::delta(int rank, pid_t pid, uint32_t index, uint64_t identity,
                                     const Totals& now, uint64_t now_ns) {
  const uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32 | index;
  Series& s = series_[key];
  if (s.pid != pid || s.identity != identity ||
      (!s.samples.empty() && went_backwards(now, s.samples.back().totals))) {
    s = Series{};
    s.pid = pid;
    s.identity = identity;
  }
  s.last_seen_ns = now_ns;

  // Baseline: the newest sample at least a window old, else the series' start.
  const uint64_t cutoff = now_ns >= window_ns_ ? now_ns - window_ns_ : 0;
  size_t base = s.samples.size();
  for (size_t i = s.samples.size(); i-- > 0;) {
    if (s.samples[i].t_ns <= cutoff) {
      base = i;
      break;
    }
  }
  Totals then{};
  if (base < s.samples.size()) {
    then = s.samples[base].totals;
    // Older samples can never be a baseline again.
    s.samples.erase(s.samples.begin(), s.samples.begin() + static_cast<ptrdiff_t>(base));
  }
  if (s.samples.empty() || now_ns - s.samples.back().t_ns >= window_ns_ / 8) {
    s.samples.push_back(Sample{now_ns, now});
  }
  return Totals{now.count - then.count, now.sum_ns - then.sum_ns, now.sum_bytes - then.sum_bytes,
                now.sum_flops - then.sum_flops};
}

void RateWindow::sweep(uint64_t now_ns, uint64_t keep_ns) {
  for (auto it = series_.begin(); it != series_.end();) {
    if (now_ns > keep_ns && it->second.last_seen_ns < now_ns - keep_ns) {
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace xpu_timer::supervisor
