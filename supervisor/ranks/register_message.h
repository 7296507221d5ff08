// Validation of what a rank sends on the unix socket. Untrusted bytes in,
// a checked registration or one line saying what is wrong out. Pure.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include "common/rank_identity.h"

namespace xpu_timer::supervisor {

// A checked registration: the rank's identity (reg.rank, reg.group_rank, ...)
// and the process, host and page that hold it.
struct RankRegistration : RankIdentity {
  pid_t pid = 0;
  std::string host;
  std::string status_path;
};

// Upper bounds that keep a bogus identity from sizing our tables.
constexpr int kMaxWorldSize = 1 << 24;
constexpr int kMaxLocalWorldSize = 1 << 16;

std::optional<RankRegistration> parse_register_message(const void* data, size_t len,
                                                       std::string* error);

}  // namespace xpu_timer::supervisor
