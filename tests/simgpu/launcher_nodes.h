// The launchers of one simulated multi-node job: K xpu_timer_sim_launch
// processes on one machine, one per "node", started in any order with the
// same --job-id. Their ranks find each other by themselves (the NCCL
// segments are named from the job id, created and sized by whichever rank
// comes first, and unlinked by the last rank to leave each communicator; see
// rendezvous.h). What the launchers must agree on is the clean-up of what
// ranks leave behind when they are killed: the single-node launcher removes
// every /dev/shm/xpu_sim_<job>_* when its ranks are gone, which with several
// launchers would pull the segments from under the other nodes' ranks.
//
// So the launchers register in /dev/shm/xpu_sim_<job>_nodes (its name never
// matches a communicator's, which ends in 16 hex digits): the job's shape
// (nodes, ranks per node) and, per node rank, the launcher's pid and whether
// it is running or done. Every read-modify-write happens under flock() of
// that file, so creation, joining and leaving are race-free in any order.
// The launcher that leaves while no other registered launcher is still
// alive (running, and its pid not dead or a zombie: a SIGKILLed launcher
// never says goodbye) removes all of the job's segments, this file
// included, while still holding the lock. A launcher that then locks the
// removed file sees that its name is gone and opens a fresh one.
//
// A file whose launchers are all dead when a new one joins is what a killed
// run left behind: the joiner removes the job's stale segments and starts
// afresh, so that a rerun with the same job id works.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace xpu_timer::simgpu {

// The launchers of one job (its ranks: at most rendezvous.h kMaxRanks, the
// simulated NCCL's largest communicator).
constexpr int kMaxNodes = 1024;

class LauncherNodes {
 public:
  enum class JoinError {
    kNone,
    kConflict,  // another launcher disagrees (shape, or the same node rank): a usage error
    kSystem,    // a system call failed
  };

  // Registers this process as node `node_rank` of `nnodes` nodes of `nproc`
  // ranks each. On failure returns nullptr with one line in *message.
  static std::unique_ptr<LauncherNodes> join(const std::string& job_id, int nnodes, int nproc,
                                             int node_rank, JoinError* error, std::string* message);
  // Leaves if leave() was not called.
  ~LauncherNodes();
  LauncherNodes(const LauncherNodes&) = delete;
  LauncherNodes& operator=(const LauncherNodes&) = delete;

  // Marks this node done (call when its ranks are gone). The last launcher
  // alive removes the job's segments; returns true if this one did.
  bool leave();

  // "/dev/shm/xpu_sim_<job>_nodes".
  static std::string path(const std::string& job_id);

 private:
  LauncherNodes(std::string job_id, int node_rank, int fd)
      : job_id_(std::move(job_id)), node_rank_(node_rank), fd_(fd) {}
  std::string job_id_;
  int node_rank_;
  int fd_;  // the registry, open (not locked) while this node runs; -1 after leave()
};

}  // namespace xpu_timer::simgpu
