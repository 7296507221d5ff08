// A rank's identity from each launcher's variables: torchrun's, Open MPI's
// (mpirun starting the ranks itself) and Slurm's (srun starting them), never
// a mix of two launchers.
#include "common/env_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace xpu_timer {
namespace {

RankIdentity identity(const std::map<std::string, std::string>& vars) {
  return rank_identity_from([&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

// rank, local rank, world size, local world size, node
void expect(const RankIdentity& id, int rank, int local, int world, int local_world, int node) {
  EXPECT_EQ(id.rank, rank);
  EXPECT_EQ(id.local_rank, local);
  EXPECT_EQ(id.world_size, world);
  EXPECT_EQ(id.local_world_size, local_world);
  EXPECT_EQ(id.group_rank, node);
}

TEST(RankIdentity, NoLauncherIsRankZeroOfOne) { expect(identity({}), 0, 0, 1, 1, 0); }

TEST(RankIdentity, Torchrun) {
  expect(identity({{"RANK", "13"},
                   {"LOCAL_RANK", "5"},
                   {"WORLD_SIZE", "16"},
                   {"LOCAL_WORLD_SIZE", "8"},
                   {"GROUP_RANK", "1"}}),
         13, 5, 16, 8, 1);
}

TEST(RankIdentity, OpenMpiNodeFromTheBlockOfConsecutiveRanks) {
  expect(identity({{"OMPI_COMM_WORLD_RANK", "13"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "5"},
                   {"OMPI_COMM_WORLD_SIZE", "16"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}}),
         13, 5, 16, 8, 1);
}

TEST(RankIdentity, SlurmWithNtasksPerNodeOrTasksPerNode) {
  expect(identity({{"SLURM_PROCID", "13"},
                   {"SLURM_LOCALID", "5"},
                   {"SLURM_NTASKS", "16"},
                   {"SLURM_NTASKS_PER_NODE", "8"},
                   {"SLURM_NODEID", "1"}}),
         13, 5, 16, 8, 1);
  expect(identity({{"SLURM_PROCID", "21"},
                   {"SLURM_LOCALID", "5"},
                   {"SLURM_NTASKS", "24"},
                   {"SLURM_TASKS_PER_NODE", "8(x3)"}}),
         21, 5, 24, 8, 2);
  // Neither count: one node holding the whole world.
  expect(identity({{"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "3"}, {"SLURM_NTASKS", "4"}}), 3, 3, 4,
         4, 0);
}

TEST(RankIdentity, TorchrunInsideSrunIgnoresTheStepsVariables) {
  // srun --ntasks-per-node=1 xpu_timer_supervisor -- torchrun ...: the ranks
  // inherit the step's one-task-per-node variables.
  expect(identity({{"RANK", "13"},
                   {"LOCAL_RANK", "5"},
                   {"WORLD_SIZE", "16"},
                   {"LOCAL_WORLD_SIZE", "8"},
                   {"GROUP_RANK", "1"},
                   {"SLURM_PROCID", "1"},
                   {"SLURM_LOCALID", "0"},
                   {"SLURM_NTASKS", "2"},
                   {"SLURM_NTASKS_PER_NODE", "1"}}),
         13, 5, 16, 8, 1);
}

TEST(RankIdentity, MpirunInsideASlurmJobIsOpenMpis) {
  expect(identity({{"OMPI_COMM_WORLD_RANK", "9"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                   {"OMPI_COMM_WORLD_SIZE", "16"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"},
                   {"SLURM_PROCID", "1"},
                   {"SLURM_LOCALID", "0"},
                   {"SLURM_NTASKS", "2"}}),
         9, 1, 16, 8, 1);
}

TEST(RankIdentity, EmptyOrMalformedValuesFallBack) {
  // An empty RANK is unset: Slurm's variables are read.
  expect(identity({{"RANK", ""},
                   {"SLURM_PROCID", "2"},
                   {"SLURM_NTASKS", "4"},
                   {"SLURM_LOCALID", "0"},
                   {"SLURM_TASKS_PER_NODE", "x"}}),
         2, 0, 4, 4, 0);
  expect(identity({{"RANK", "1x"}, {"WORLD_SIZE", "2"}}), 0, 0, 2, 2, 0);
}

// The numbers of the environment go through the product's one parser: the
// whole value or the fallback, never a prefix, whatever the locale says.
TEST(EnvNumbers, TheWholeValueOrTheFallback) {
  const char* name = "XPU_TIMER_ENV_CONFIG_TEST_NUMBER";
  unsetenv(name);
  EXPECT_EQ(env_double(name, 7.5), 7.5);
  EXPECT_EQ(env_long(name, -3), -3);
  for (const auto& [text, real, whole] :
       std::vector<std::tuple<const char*, double, long>>{{"2.5", 2.5, -3},
                                                          {"-1e3", -1000, -3},
                                                          {"42", 42, 42},
                                                          {"", 7.5, -3},
                                                          {" 2", 7.5, -3},
                                                          {"2 ", 7.5, -3},
                                                          {"1,5", 7.5, -3},
                                                          {"0x10", 7.5, -3},
                                                          {"inf", 7.5, -3},
                                                          {"nan", 7.5, -3},
                                                          {"+1", 7.5, -3},
                                                          {"12abc", 7.5, -3}}) {
    setenv(name, text, 1);
    EXPECT_EQ(env_double(name, 7.5), real) << "'" << text << "'";
    EXPECT_EQ(env_long(name, -3), whole) << "'" << text << "'";
  }
  unsetenv(name);
}

}  // namespace
}  // namespace xpu_timer
