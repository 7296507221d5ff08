#include "common/env_config.h"

#include <strings.h>

#include <cerrno>
#include <cstdlib>

namespace xpu_timer {

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0') return fallback;
  return x;
}

double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v, &end);
  if (errno != 0 || end == v || *end != '\0') return fallback;
  return x;
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

RankIdentity rank_identity_from_env() {
  RankIdentity id;
  id.rank = static_cast<int>(env_long("RANK", 0));
  id.world_size = static_cast<int>(env_long("WORLD_SIZE", 1));
  id.local_rank = static_cast<int>(env_long("LOCAL_RANK", id.rank));
  id.local_world_size = static_cast<int>(env_long("LOCAL_WORLD_SIZE", id.world_size));
  id.group_rank = static_cast<int>(env_long("GROUP_RANK", 0));
  return id;
}

}  // namespace xpu_timer
