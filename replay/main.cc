// xpu_timer_gemm_replay: the GEMMs of a flight-recorder dump, replayed on
// this GPU (replay_cli.h).
#include "common/log.h"
#include "replay/replay_cli.h"

int main(int argc, char** argv) {
  xpu_timer::set_log_tag("gemm_replay");
  return xpu_timer::replay::run_replay_cli(argc, argv);
}
