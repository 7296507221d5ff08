// Validation of what a rank sends on the unix socket. Untrusted bytes in,
// a checked registration or one line saying what is wrong out. Pure.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

namespace xpu_timer::supervisor {

struct RankRegistration {
  pid_t pid = 0;
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int group_rank = 0;
  std::string host;
  std::string status_path;
};

// Upper bounds that keep a bogus identity from sizing our tables.
constexpr int kMaxWorldSize = 1 << 24;
constexpr int kMaxLocalWorldSize = 1 << 16;

std::optional<RankRegistration> parse_register_message(const void* data, size_t len,
                                                       std::string* error);

}  // namespace xpu_timer::supervisor
