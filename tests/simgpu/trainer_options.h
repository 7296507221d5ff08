// Command-line flags of sim_trainer (the same as tests/simgpu/sim_trainer.py).
// Steps are numbered from 0; a rank's step S is the (S+1)-th step.
#pragma once

#include <string>

namespace xpu_timer::simgpu {

struct TrainerOptions {
  int steps = 10;
  int gemm_m = 1024, gemm_n = 1024, gemm_k = 1024;
  int gemm2_m = 0, gemm2_n = 0, gemm2_k = 0;  // --gemm2; 0: none
  std::string gemm_api = "gemmex";            // a sim_gemm_api_from_name name, or "all" (rotate)
  int gemm_batch = 2;                         // batch of the strided-batched APIs
  int gemms_per_step = 3;
  std::string collective = "allreduce";
  long bytes = 1 << 20;
  int hang_rank = -1, hang_step = -1;
  std::string hang_file;  // "" = none
  int sync_lag = 0;       // --sync-lag: steps the host may run ahead of the GPU
  int stall_step = -1;    // every rank stops in host code there, nothing in flight
  int slow_rank = -1;
  double slow_ms = 0;
  // Exported to the simulated libraries as XPU_TIMER_SIM_SLOW_{GPU,LINK}_* (slow_rank.h).
  int slow_gpu_rank = -1, slow_link_rank = -1;
  double slow_gpu_factor = 1.0, slow_link_factor = 1.0;
  double jitter_ms = 0;
  double step_ms = 0;
  int crash_rank = -1, crash_step = -1;
  // At --mismatch-step, --mismatch-rank issues a collective that disagrees
  // with the other ranks' (op: another collective, count: twice the
  // elements, dtype: float32 instead of bf16, root: root 1 instead of 0).
  int mismatch_rank = -1, mismatch_step = -1;
  std::string mismatch_file;         // "" = none: else the step that first finds it disagrees
  std::string mismatch_kind = "op";  // op | count | dtype | root
  std::string mismatch_hold;         // "" = none; see held_after_odd_collective
  long second_comm_bytes = 0;        // > 0: each step also all-reduces this on a 2nd communicator
  int second_comm_groups = 1;        // the 2nd communicator split into this many groups (rank % G)
  bool hang_before_second = false;   // --hang-rank stops before the 2nd collective of its step
  // --parallel TP,PP,DP (product = world size): each step also all-reduces
  // --bytes on the tensor, pipeline and data parallel groups as Megatron
  // builds them (communicators "tp", "pp", "dp"), in that order. 0: off.
  int tp = 0, pp = 0, dp = 0;
  std::string hang_before_group;  // "tp" | "pp" | "dp": --hang-rank stops before that one
  // At --swap-step, --swap-rank issues its "tp" collective before the world
  // one: the other members of its tensor group wait for it in the world
  // collective while it waits for them in tp, a deadlock by order.
  int swap_rank = -1, swap_step = -1;
  // Non-empty: the communicators are named (ncclConfig_t::commName): this,
  // and this + "_split" for the one of --second-comm-bytes.
  std::string comm_name;
  std::string crash_kind = "segv";  // segv | abort | exception
  int exit_code = 0;
  bool verbose = false;
  bool help = false;    // -h/--help was given: print trainer_help() and exit 0
  std::string lib_dir;  // --lib-dir, else XPU_TIMER_SIM_LIB_DIR, else the build's lib dir
};

// Parses argv; on error writes a message to *error and returns false.
bool parse_trainer_options(int argc, char** argv, TrainerOptions* out, std::string* error);
const char* trainer_usage();
std::string trainer_help();  // usage, then every flag with its default and variable
// Sets the XPU_TIMER_SIM_SLOW_* variables of the slow-rank flags that were
// given, before the simulated libraries read them (they read them once).
// On failure writes a message with errno to *error and returns false.
bool export_slow_rank_knobs(const TrainerOptions& options, std::string* error);

}  // namespace xpu_timer::simgpu
