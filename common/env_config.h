// Reading of environment variables: torchrun's identity of a rank and
// xpu-timer's settings. Pure reads of the environment; any thread, but call
// before the process starts threads that setenv (none of ours do).
#pragma once

#include <string>

#include "common/rank_identity.h"

namespace xpu_timer {

// torchrun's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK.
// A process started without them is rank 0 of a world of 1.
RankIdentity rank_identity_from_env();

// Integer value of `name`, or `fallback` when unset or not a whole number.
long env_long(const char* name, long fallback);
double env_double(const char* name, double fallback);
// "1", "true", "yes", "on" (any case) are true.
bool env_bool(const char* name, bool fallback);
std::string env_string(const char* name, const std::string& fallback);

}  // namespace xpu_timer
