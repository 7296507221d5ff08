// xpu_timer_gen_trace_timeline: flight-recorder dumps to a Perfetto-loadable
// trace, or the diff of two timelines (timeline_cli.h).
#include "timeline/timeline_cli.h"

int main(int argc, char** argv) { return xpu_timer::timeline::run_timeline_cli(argc, argv); }
