// End to end, the shapes of docs/quickstart.md "Slurm and mpirun": ranks
// started one process each, without torchrun, under one supervisor per node,
// knowing who they are only from Open MPI's or Slurm's variables. A shell
// stands in for the node's share of `mpirun` or `srun` (it sets what those
// set, nothing of torchrun's) and starts the sim trainers directly. The
// supervisor must name every rank by its global rank and node: a hang is
// reported exactly as under torchrun.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace launcher_env_e2e {

// The node's share of a launcher: `count` trainers of global ranks
// first..first+count-1, each with `vars` (a shell fragment using $R, the
// global rank, and $L, the local one) in its environment.
std::vector<std::string> node_job(int first, int count, const std::string& vars,
                                  const std::vector<std::string>& trainer_args) {
  std::string cmd = "for L in $(seq 0 " + std::to_string(count - 1) + "); do R=$((L + " +
                    std::to_string(first) + ")); env " + vars + " " + sim_trainer_bin();
  for (const std::string& a : trainer_args) cmd += " " + a;
  cmd += " & done; wait";
  return {"sh", "-c", cmd};
}

// The trainers, without torchrun's variables (the supervisor's environment
// could hold them), meeting in one simulated job on nodes of `gpus` GPUs
// (the simulated runtime counts LOCAL_WORLD_SIZE's otherwise).
std::vector<std::string> job_env(const std::string& job_id, int gpus) {
  return {"RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "LOCAL_WORLD_SIZE=", "GROUP_RANK=",
          "OMPI_COMM_WORLD_RANK=", "SLURM_PROCID=", "XPU_TIMER_SIM_JOB_ID=" + job_id,
          "XPU_TIMER_SIM_DEVICE_COUNT=" + std::to_string(gpus)};
}

// Removes the simulated job's shared memory: without xpu_timer_sim_launch
// nobody else does.
struct SimJobSegments {
  std::string job_id = "launcher-env-" + std::to_string(getpid());
  ~SimJobSegments() {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
      if (e.path().filename().string().rfind("xpu_sim_" + job_id, 0) == 0) {
        std::filesystem::remove(e.path(), ec);
      }
    }
  }
};

const std::vector<std::string> kTrainer = {"--steps", "100000", "--step-ms",   "20",
                                           "--bytes", "65536",  "--hang-step", "5"};

std::vector<std::string> trainer_hanging(int rank) {
  std::vector<std::string> args = kTrainer;
  args.insert(args.end(), {"--hang-rank", std::to_string(rank)});
  return args;
}

// hang.json once written, or null (after a test failure naming the log).
nlohmann::json wait_hang(SupervisedJob& job) {
  const std::string path = job.dump_dir() + "/hang.json";
  if (!wait_until([&] { return file_exists(path); }, std::chrono::seconds(60))) {
    ADD_FAILURE() << "no hang.json; supervisor console:\n" << job.log();
    return nullptr;
  }
  return nlohmann::json::parse(read_file(path));
}

// rank -> "state@node" of a hang document.
std::map<int, std::string> states(const nlohmann::json& hang) {
  std::map<int, std::string> out;
  for (const auto& r : hang.at("ranks")) {
    out[r.at("rank").get<int>()] =
        r.at("state").get<std::string>() + "@" + std::to_string(r.at("node").get<int>());
  }
  return out;
}

TEST(LauncherEnvE2E, MpirunRanksOnOneNodeAreNamedByTheirOpenMpiRank) {
  SimJobSegments segments;
  const std::string vars =
      "OMPI_COMM_WORLD_RANK=$R OMPI_COMM_WORLD_LOCAL_RANK=$L OMPI_COMM_WORLD_SIZE=4 "
      "OMPI_COMM_WORLD_LOCAL_SIZE=4";
  SupervisedJob job("mpirun-shape", {"--hang-timeout", "2"},
                    node_job(0, 4, vars, trainer_hanging(2)), job_env(segments.job_id, 4));
  const nlohmann::json hang = wait_hang(job);
  ASSERT_FALSE(hang.is_null());
  EXPECT_EQ(states(hang), (std::map<int, std::string>{
                              {0, "stuck@0"}, {1, "stuck@0"}, {2, "missing@0"}, {3, "stuck@0"}}))
      << hang.dump(2);
  const std::string summary = hang.at("summary").get<std::string>();
  EXPECT_TRUE(
      std::regex_match(summary, std::regex("ranks 0,1,3 stuck in AllReduce #6 on comm [0-9a-f]{16} "
                                           "for [0-9.]+ s; rank 2 missing \\(last completed #5 on "
                                           "that comm\\)")))
      << summary;
}

TEST(LauncherEnvE2E, SrunRanksOfTwoNodesAreNamedByTheirSlurmRankAndNode) {
  // srun --ntasks 4 --ntasks-per-node 2 (block placement): node 0 runs
  // ranks 0-1, node 1 ranks 2-3; one supervisor per node, rank 3 hangs.
  SimJobSegments segments;
  const std::string vars =
      "SLURM_PROCID=$R SLURM_LOCALID=$L SLURM_NTASKS=4 SLURM_TASKS_PER_NODE='2(x2)'";
  SupervisedJob node0("srun-shape-node0", {"--hang-timeout", "2"},
                      node_job(0, 2, vars + " SLURM_NODEID=0", trainer_hanging(3)),
                      job_env(segments.job_id, 2));
  SupervisedJob node1("srun-shape-node1", {"--hang-timeout", "2"},
                      node_job(2, 2, vars + " SLURM_NODEID=1", trainer_hanging(3)),
                      job_env(segments.job_id, 2));
  const nlohmann::json hang1 = wait_hang(node1);
  ASSERT_FALSE(hang1.is_null());
  EXPECT_EQ(states(hang1), (std::map<int, std::string>{{2, "stuck@1"}, {3, "missing@1"}}))
      << hang1.dump(2);
  const std::string summary1 = hang1.at("summary").get<std::string>();
  EXPECT_TRUE(std::regex_match(summary1,
                               std::regex("rank 2 stuck in AllReduce #6 on comm [0-9a-f]{16} for "
                                          "[0-9.]+ s; rank 3 missing \\(last completed #5 on that "
                                          "comm\\)")))
      << summary1;
  const std::string log1 = node1.log();
  EXPECT_TRUE(std::regex_search(
      log1, std::regex("rank 3 registered: pid [0-9]+ on [^,]+, local rank 1 of 2, node 1, "
                       "world 4\n")))
      << log1;

  // Node 0 alone sees its two ranks wait in the same collective.
  const nlohmann::json hang0 = wait_hang(node0);
  ASSERT_FALSE(hang0.is_null());
  EXPECT_EQ(states(hang0), (std::map<int, std::string>{{0, "stuck@0"}, {1, "stuck@0"}}))
      << hang0.dump(2);
  EXPECT_TRUE(std::regex_match(hang0.at("summary").get<std::string>(),
                               std::regex("ranks 0,1 stuck in AllReduce #6 on comm [0-9a-f]{16} "
                                          "for [0-9.]+ s")))
      << hang0.at("summary");
}

}  // namespace launcher_env_e2e
}  // namespace xpu_timer::testing
