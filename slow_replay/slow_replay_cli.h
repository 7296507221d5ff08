// xpu_timer_slow_replay's command line: parses the flags, loads the dump
// folders, replays them (slow_replay.h) and prints the verdict as GET /slow
// serves it. Returns the exit status.
#pragma once

namespace xpu_timer::slow_replay {

int run_slow_replay_cli(int argc, const char* const* argv);

}  // namespace xpu_timer::slow_replay
