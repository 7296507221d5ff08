#include "supervisor/ranks/register_message.h"

#include "common/rank_messages.h"

namespace xpu_timer::supervisor {

std::optional<RankRegistration> parse_register_message(const void* data, size_t len,
                                                       std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<RankRegistration> {
    if (error != nullptr) *error = why;
    return std::nullopt;
  };
  proto::RegisterMsg msg;
  if (!proto::decode_register(data, len, &msg, error)) return std::nullopt;

  RankRegistration reg;
  reg.pid = msg.pid;
  static_cast<RankIdentity&>(reg) = proto::identity_of(msg);
  if (reg.pid <= 0) return fail("bad pid " + std::to_string(reg.pid));
  if (reg.world_size < 1 || reg.world_size > kMaxWorldSize) {
    return fail("bad world_size " + std::to_string(reg.world_size));
  }
  if (reg.rank < 0 || reg.rank >= reg.world_size) {
    return fail("rank " + std::to_string(reg.rank) + " outside world of " +
                std::to_string(reg.world_size));
  }
  if (reg.local_world_size < 1 || reg.local_world_size > kMaxLocalWorldSize ||
      reg.local_world_size > reg.world_size) {
    return fail("bad local_world_size " + std::to_string(reg.local_world_size));
  }
  if (reg.local_rank < 0 || reg.local_rank >= reg.local_world_size) {
    return fail("local_rank " + std::to_string(reg.local_rank) + " outside local world of " +
                std::to_string(reg.local_world_size));
  }
  if (reg.group_rank < 0 ||
      static_cast<long long>(reg.group_rank) * reg.local_world_size >= reg.world_size) {
    return fail("bad group_rank " + std::to_string(reg.group_rank));
  }
  reg.host = msg.hostname;  // both NUL-terminated: decode_register checked
  reg.status_path = msg.status_path;
  if (reg.status_path.empty() || reg.status_path[0] != '/') {
    return fail("status_path is not an absolute path");
  }
  return reg;
}

}  // namespace xpu_timer::supervisor
