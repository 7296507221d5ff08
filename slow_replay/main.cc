// xpu_timer_slow_replay: the supervisor's slow-rank analysis over
// flight-recorder dumps (slow_replay_cli.h).
#include "common/log.h"
#include "slow_replay/slow_replay_cli.h"

int main(int argc, char** argv) {
  xpu_timer::set_log_tag("slow_replay");
  return xpu_timer::slow_replay::run_slow_replay_cli(argc, argv);
}
