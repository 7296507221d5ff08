// xpu_timer_gen_trace_timeline: flight-recorder dumps to a Perfetto-loadable
// trace, or the diff of two timelines (timeline_cli.h).
#include "common/log.h"
#include "timeline/timeline_cli.h"

int main(int argc, char** argv) {
  // Here, not in run_timeline_cli: the supervisor runs that in-process, and
  // its log lines must stay its own.
  xpu_timer::set_log_tag("gen_trace_timeline");
  return xpu_timer::timeline::run_timeline_cli(argc, argv);
}
