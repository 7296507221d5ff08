// The ranks of a simulated torchrun job: spawns them with torchrun's
// environment, reaps them, and on the first failure (or a forwarded signal)
// terminates the others, SIGTERM first and SIGKILL after a grace period.
// Single-threaded by design: the launcher blocks its signals and takes them
// synchronously with sigtimedwait, so there are no async handlers at all.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace xpu_timer::simgpu {

// What the launcher's messages begin with.
inline constexpr const char* kLauncherTag = "xpu_timer_sim_launch";

struct LaunchConfig {
  int nproc = 1;      // ranks of this launcher (LOCAL_WORLD_SIZE)
  int nnodes = 1;     // launchers of the job (WORLD_SIZE = nnodes * nproc)
  int node_rank = 0;  // this launcher's (GROUP_RANK; RANK = node_rank * nproc + LOCAL_RANK)
  std::string job_id;
  double grace_s = 5.0;
  std::vector<std::string> command;
};

class RankGroup {
 public:
  explicit RankGroup(LaunchConfig config);
  // Blocks the signals it will take synchronously; call before run().
  bool block_signals();
  // Spawns every rank and waits for all (the caller removes the job's
  // segments afterwards, see launcher_nodes.h). Returns the launcher's exit code:
  // 0 if all ranks exited 0; else the first failed rank's exit code, or
  // 128+signal if it was killed by a signal; 128+signal too when the
  // launcher itself was told to stop by SIGTERM/SIGINT/SIGHUP.
  int run();

 private:
  struct Rank {
    pid_t pid = -1;
    bool running = false;
  };
  int global_rank(int local_rank) const { return config_.node_rank * config_.nproc + local_rank; }
  bool spawn(int rank);
  void reap();
  void signal_all(int sig);
  void start_termination(double now_s);

  LaunchConfig config_;
  sigset_t taken_{};
  sigset_t original_mask_{};
  std::vector<Rank> ranks_;
  int exit_code_ = 0;
  bool failed_ = false;
  int received_signal_ = 0;
  bool terminating_ = false;
  bool killed_ = false;
  double kill_deadline_s_ = 0;
};

// Removes /dev/shm/xpu_sim_<job id>_* (the job's NCCL rendezvous segments,
// and the launchers' registry of a multi-node job).
void remove_job_segments(const std::string& job_id);
// "SIGSEGV" for 11 and so on ("SIG<n>" when unknown).
std::string signal_name(int sig);

}  // namespace xpu_timer::simgpu
