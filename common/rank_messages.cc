#include "common/rank_messages.h"

#include <cstring>

namespace xpu_timer::proto {

namespace {

bool fail(std::string* error, const std::string& why) {
  if (error != nullptr) *error = why;
  return false;
}

// Copies `src` into a fixed field, NUL-terminated; false when it was cut.
bool copy_bounded(char* field, size_t size, const char* src) {
  const size_t n = strnlen(src, size);
  const size_t kept = n < size ? n : size - 1;
  std::memcpy(field, src, kept);
  field[kept] = '\0';
  return kept == n;
}

bool nul_terminated(const char* field, size_t size) {
  return std::memchr(field, '\0', size) != nullptr;
}

const char* type_name(MsgType type) {
  switch (type) {
    case MsgType::kRegister:
      return "register";
    case MsgType::kCrashReport:
      return "crash report";
    case MsgType::kPythonException:
      return "exception report";
  }
  return "unknown";
}

// Checks the header and that the message is of `want`.
bool decode_typed(const void* data, size_t len, MsgType want, std::string* error) {
  const std::optional<MsgType> type = decode_message(data, len, error);
  if (!type) return false;
  if (*type != want) {
    return fail(error, std::string("a ") + type_name(*type) + " message where a " +
                           type_name(want) + " was expected");
  }
  return true;
}

}  // namespace

MsgHeader make_header(MsgType type, uint32_t bytes) {
  MsgHeader h{};
  h.magic = kMessageMagic;
  h.version = static_cast<uint16_t>(kMessageVersion);
  h.type = static_cast<uint16_t>(type);
  h.bytes = bytes;
  return h;
}

bool encode_register(const RegisterInfo& info, RegisterMsg* out) {
  std::memset(out, 0, sizeof(*out));
  out->header = make_header(MsgType::kRegister, sizeof(RegisterMsg));
  out->pid = info.pid;
  out->rank = info.identity.rank;
  out->local_rank = info.identity.local_rank;
  out->world_size = info.identity.world_size;
  out->local_world_size = info.identity.local_world_size;
  out->group_rank = info.identity.group_rank;
  const bool host_fits = copy_bounded(out->hostname, sizeof(out->hostname), info.hostname);
  const bool path_fits = copy_bounded(out->status_path, sizeof(out->status_path), info.status_path);
  return host_fits && path_fits;
}

RankIdentity identity_of(const RegisterMsg& msg) {
  RankIdentity id;
  id.rank = msg.rank;
  id.local_rank = msg.local_rank;
  id.world_size = msg.world_size;
  id.local_world_size = msg.local_world_size;
  id.group_rank = msg.group_rank;
  return id;
}

std::string encode_python_exception(std::string_view json) {
  if (json.size() > kMaxMessageBytes - sizeof(MsgHeader)) return "";
  const MsgHeader h = make_header(MsgType::kPythonException,
                                  static_cast<uint32_t>(sizeof(MsgHeader) + json.size()));
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(json);
  return out;
}

std::optional<MsgType> decode_message(const void* data, size_t len, std::string* error) {
  MsgHeader h;
  if (len < sizeof(h)) {
    fail(error, "message of " + std::to_string(len) + " bytes is too short");
    return std::nullopt;
  }
  std::memcpy(&h, data, sizeof(h));
  std::string why;
  if (h.magic != kMessageMagic) {
    why = "bad message magic";
  } else if (h.version != kMessageVersion) {
    why = "protocol version " + std::to_string(h.version) + ", supervisor speaks " +
          std::to_string(kMessageVersion) + " (stale libxpu_timer_inject.so?)";
  } else if (h.bytes != len || len > kMaxMessageBytes) {
    why = "message of " + std::to_string(len) + " bytes, header says " + std::to_string(h.bytes);
  } else {
    const auto type = static_cast<MsgType>(h.type);
    switch (type) {
      case MsgType::kRegister:
      case MsgType::kCrashReport: {
        const size_t want =
            type == MsgType::kRegister ? sizeof(RegisterMsg) : sizeof(CrashReportMsg);
        if (len == want) return type;
        why = std::string(type_name(type)) + " message of " + std::to_string(len) +
              " bytes, expected " + std::to_string(want);
        break;
      }
      case MsgType::kPythonException:
        if (len > sizeof(h)) return type;
        why = "empty exception report";
        break;
      default:
        why = "unknown message type " + std::to_string(h.type);
    }
  }
  fail(error, why);
  return std::nullopt;
}

bool decode_register(const void* data, size_t len, RegisterMsg* out, std::string* error) {
  if (!decode_typed(data, len, MsgType::kRegister, error)) return false;
  std::memcpy(out, data, sizeof(*out));
  if (!nul_terminated(out->hostname, sizeof(out->hostname))) {
    return fail(error, "hostname is not NUL-terminated");
  }
  if (!nul_terminated(out->status_path, sizeof(out->status_path))) {
    return fail(error, "status_path is not NUL-terminated");
  }
  return true;
}

bool decode_crash_report(const void* data, size_t len, CrashReportMsg* out, std::string* error) {
  if (!decode_typed(data, len, MsgType::kCrashReport, error)) return false;
  std::memcpy(out, data, sizeof(*out));
  if (out->nframes > static_cast<uint32_t>(kCrashMaxFrames) ||
      out->nmodules > static_cast<uint32_t>(kCrashMaxModules)) {
    return fail(error, "frame or module count out of range");
  }
  return true;
}

std::optional<std::string_view> decode_python_exception(const void* data, size_t len,
                                                        std::string* error) {
  if (!decode_typed(data, len, MsgType::kPythonException, error)) return std::nullopt;
  return std::string_view(static_cast<const char*>(data) + sizeof(MsgHeader),
                          len - sizeof(MsgHeader));
}

}  // namespace xpu_timer::proto
