// The command line of xpu_timer_gen_trace_timeline (main.cc only calls this):
//   --path DIR [--path DIR2 ...] [--output FILE] [--groups tp4-cp2-dp4-pp2]
//   --diff A B [--output FILE]
// Exit status: 0 done, 1 nothing usable found or the output not written,
// 2 a usage mistake. Every problem is one line on stderr.
#pragma once

namespace xpu_timer::timeline {

int run_timeline_cli(int argc, const char* const* argv);

}  // namespace xpu_timer::timeline
