// `--diff A B --trace FILE`: the diff as a Chrome Trace Event file, a picture
// of one step (or second) of each side: process "A" and process "B", one
// track each, holding one slice per operation and shape laid end to end,
// each as long as the time spent in it per rank and step, in the diff's order
// (largest change first). The same name on both sides gets the same colour in
// Perfetto UI, so a slice that grew stands out, and its args carry calls,
// mean latency, the ratio and the change. A few dozen events: cheap to write
// and to load beside the full traces of A and B.
#pragma once

#include <nlohmann/json.hpp>

#include "timeline/timeline_diff.h"

namespace xpu_timer::timeline {

nlohmann::json diff_trace(const TimelineDiff& d);

}  // namespace xpu_timer::timeline
