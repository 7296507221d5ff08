#include "supervisor/register_message.h"

#include <cstring>

#include "common/protocol.h"

namespace xpu_timer::supervisor {
namespace {

// Copy of a fixed char field up to its first NUL; nullopt when unterminated.
std::optional<std::string> bounded_string(const char* field, size_t size) {
  const void* nul = memchr(field, '\0', size);
  if (nul == nullptr) return std::nullopt;
  return std::string(field, static_cast<const char*>(nul));
}

}  // namespace

std::optional<RankRegistration> parse_register_message(const void* data, size_t len,
                                                       std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<RankRegistration> {
    if (error != nullptr) *error = why;
    return std::nullopt;
  };
  proto::MsgHeader header;
  if (len < sizeof(header))
    return fail("message of " + std::to_string(len) + " bytes is too short");
  memcpy(&header, data, sizeof(header));
  if (header.magic != proto::kMessageMagic) return fail("bad message magic");
  if (header.version != proto::kProtocolVersion) {
    return fail("protocol version " + std::to_string(header.version) + ", supervisor speaks " +
                std::to_string(proto::kProtocolVersion) + " (stale libxpu_timer_inject.so?)");
  }
  if (header.type != static_cast<uint16_t>(proto::MsgType::kRegister)) {
    return fail("unknown message type " + std::to_string(header.type));
  }
  if (header.bytes != sizeof(proto::RegisterMsg) || len != sizeof(proto::RegisterMsg)) {
    return fail("register message of " + std::to_string(len) + " bytes (header says " +
                std::to_string(header.bytes) + "), expected " +
                std::to_string(sizeof(proto::RegisterMsg)));
  }
  proto::RegisterMsg msg;
  memcpy(&msg, data, sizeof(msg));

  RankRegistration reg;
  reg.pid = msg.pid;
  reg.rank = msg.rank;
  reg.local_rank = msg.local_rank;
  reg.world_size = msg.world_size;
  reg.local_world_size = msg.local_world_size;
  reg.group_rank = msg.group_rank;
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
  auto host = bounded_string(msg.hostname, sizeof(msg.hostname));
  if (!host) return fail("hostname is not NUL-terminated");
  auto path = bounded_string(msg.status_path, sizeof(msg.status_path));
  if (!path || path->empty() || (*path)[0] != '/')
    return fail("status_path is not an absolute path");
  reg.host = std::move(*host);
  reg.status_path = std::move(*path);
  return reg;
}

}  // namespace xpu_timer::supervisor
