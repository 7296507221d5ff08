#include "common/env_config.h"

#include <strings.h>

#include <climits>
#include <cstdlib>
#include <string_view>

#include "common/parse_number.h"

namespace xpu_timer {
namespace {

// Integer value of `name` as `env` gives it, or `fallback`.
long lookup_long(const EnvLookup& env, const char* name, long fallback) {
  const char* v = env(name);
  if (v == nullptr) return fallback;
  return parse_int(v, LONG_MIN, LONG_MAX).value_or(fallback);
}

// Slurm's SLURM_TASKS_PER_NODE ("8(x2)", "8,7"): the count of the first
// node, the one every node has where the layout is uniform.
long slurm_tasks_per_node(const EnvLookup& env, long fallback) {
  const long given = lookup_long(env, "SLURM_NTASKS_PER_NODE", -1);
  if (given > 0) return given;
  const char* v = env("SLURM_TASKS_PER_NODE");
  if (v == nullptr) return fallback;
  std::string_view counts = v;
  const std::optional<int64_t> x = take_int(&counts);
  return x && *x > 0 ? static_cast<long>(*x) : fallback;
}

}  // namespace

long env_long(const char* name, long fallback) {
  return lookup_long([](const char* n) { return std::getenv(n); }, name, fallback);
}

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  return parse_real(v).value_or(fallback);
}

bool env_bool(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  for (const char* t : {"1", "true", "yes", "on"}) {
    if (strcasecmp(v, t) == 0) return true;
  }
  return false;
}

std::string env_string(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return (v == nullptr || *v == '\0') ? fallback : std::string(v);
}

RankIdentity rank_identity_from(const EnvLookup& env) {
  const auto set = [&](const char* name) {
    const char* v = env(name);
    return v != nullptr && *v != '\0';
  };
  const auto get = [&](const char* name, long fallback) {
    return static_cast<int>(lookup_long(env, name, fallback));
  };
  RankIdentity id;
  // One launcher's variables, never a mix: a torchrun inside an srun step
  // also sees the step's SLURM_* (one task per node), and mpirun's ranks
  // inside a Slurm job those of its daemons' step; those must not bound the
  // launcher's own LOCAL_RANK. torchrun first, then Open MPI, then Slurm.
  if (set("RANK") || (!set("OMPI_COMM_WORLD_RANK") && !set("SLURM_PROCID"))) {
    id.rank = get("RANK", 0);
    id.world_size = get("WORLD_SIZE", 1);
    id.local_rank = get("LOCAL_RANK", id.rank);
    id.local_world_size = get("LOCAL_WORLD_SIZE", id.world_size);
    id.group_rank = get("GROUP_RANK", 0);
    return id;
  }
  if (set("OMPI_COMM_WORLD_RANK")) {
    id.rank = get("OMPI_COMM_WORLD_RANK", 0);
    id.world_size = get("OMPI_COMM_WORLD_SIZE", 1);
    id.local_rank = get("OMPI_COMM_WORLD_LOCAL_RANK", id.rank);
    id.local_world_size = get("OMPI_COMM_WORLD_LOCAL_SIZE", id.world_size);
  } else {
    id.rank = get("SLURM_PROCID", 0);
    id.world_size = get("SLURM_NTASKS", 1);
    id.local_rank = get("SLURM_LOCALID", id.rank);
    id.local_world_size = static_cast<int>(slurm_tasks_per_node(env, id.world_size));
  }
  // The node: every node holds a consecutive block of ranks (mpirun's and
  // srun's default placement), the layout the supervisor expects. Values
  // out of range are left for the supervisor's check of the registration.
  if (id.local_world_size > 0 && id.rank >= id.local_rank) {
    id.group_rank = (id.rank - id.local_rank) / id.local_world_size;
  }
  return id;
}

RankIdentity rank_identity_from_env() {
  return rank_identity_from([](const char* name) { return std::getenv(name); });
}

}  // namespace xpu_timer
