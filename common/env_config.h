// Reading of environment variables: torchrun's identity of a rank and
// xpu-timer's settings. Pure reads of the environment; any thread, but call
// before the process starts threads that setenv (none of ours do).
#pragma once

#include <functional>
#include <string>

#include "common/rank_identity.h"

namespace xpu_timer {

// Reads an environment variable; nullptr when unset. Injected so that tests
// need not touch the process environment.
using EnvLookup = std::function<const char*(const char*)>;

// Who this process is, from its launcher's variables: torchrun's RANK,
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK; else Open MPI's
// OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}; else Slurm's
// SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and SLURM_NTASKS_PER_NODE (or
// the first count of SLURM_TASKS_PER_NODE). For the last two the node is
// (rank - local rank) / local world size: nodes hold consecutive ranks.
// A process started without any of them is rank 0 of a world of 1.
RankIdentity rank_identity_from(const EnvLookup& env);
RankIdentity rank_identity_from_env();  // from this process's environment

// Integer value of `name`, or `fallback` when unset or not a whole number;
// the number of `name`, or `fallback` when unset or not one (parse_number.h).
long env_long(const char* name, long fallback);
double env_double(const char* name, double fallback);
// "1", "true", "yes", "on" (any case) are true.
bool env_bool(const char* name, bool fallback);
std::string env_string(const char* name, const std::string& fallback);

}  // namespace xpu_timer
