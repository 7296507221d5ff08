// Who the others waited for at a collective: the one rule that the straggler
// analysis (supervisor/analysis/straggler.h) and the trace's "arrived last"
// track (timeline/trace_overlays.cc) both apply, so that the trace draws
// exactly the arrivals the verdict counted.
//
// A member arrives when its start marker completed on its GPU (the work it
// queued before the collective had finished). The collective cannot start
// before its last member arrives, so the last one is the rank every other
// member waited for; its margin over the next latest is how long it alone
// held the collective back (had it arrived with the next latest, the
// collective would have started then). Ties: the higher rank is last and the
// margin is 0, so an exact tie names nobody's wait.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xpu_timer {

struct LastArrival {
  size_t last = 0;    // index of the last arrival
  size_t second = 0;  // index of the next latest
  int64_t margin_ns = 0;
  bool valid = false;  // fewer than two members: nobody waited
};

// `rank_of(i)` and `arrival_of(i)` (nanoseconds of one clock, any integer
// type) for i < n.
template <typename RankOf, typename ArrivalOf>
LastArrival last_arrival(size_t n, RankOf rank_of, ArrivalOf arrival_of) {
  LastArrival out;
  if (n < 2) return out;
  auto later = [&](size_t a, size_t b) {  // a arrived after b (ties: the higher rank)
    const auto ta = arrival_of(a), tb = arrival_of(b);
    return ta != tb ? ta > tb : rank_of(a) > rank_of(b);
  };
  size_t last = 0, second = 1;
  if (later(second, last)) {
    last = 1;
    second = 0;
  }
  for (size_t i = 2; i < n; ++i) {
    if (later(i, last)) {
      second = last;
      last = i;
    } else if (later(i, second)) {
      second = i;
    }
  }
  out.last = last;
  out.second = second;
  out.margin_ns = static_cast<int64_t>(arrival_of(last)) - static_cast<int64_t>(arrival_of(second));
  out.valid = true;
  return out;
}

}  // namespace xpu_timer
