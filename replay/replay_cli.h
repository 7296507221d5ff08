// The command line of xpu_timer_gemm_replay (main.cc only calls this):
//   --path DIR [--json FILE] [--device N] [--warmup W] [--reps R]
//   [--lib-dir DIR] [--max-gib G]
// Exit status: 0 done (some groups may not have been replayed: their row
// says why), 1 no usable dump or no GPU libraries, 2 a usage mistake. Every
// problem is one line on stderr.
#pragma once

namespace xpu_timer::replay {

int run_replay_cli(int argc, const char* const* argv);

}  // namespace xpu_timer::replay
