// libFuzzer entry for the socket messages (common/rank_messages.h): one packet as
// a rank, or anything else that can connect to the supervisor's socket, sends
// it. Every decode_* of the protocol runs on it, then the supervisor's own
// checks of the same bytes (supervisor/ranks/register_message.h and
// crash_message.h: pure functions of the bytes, compiled in here without the
// rest of the supervisor). Each must refuse with a reason or return a value
// that keeps the protocol's promises; a message that decodes encodes back to
// the same fields. Never a crash or a sanitizer report (ASan/UBSan in the
// same build).
//
// Input: a mode byte, then the rest. Mode 0: the rest is the packet as it
// arrived. Modes 1 to 3: the rest is the body of a kRegister, kCrashReport or
// kPythonException message behind a sound header (the first two padded with
// zeros or cut to their fixed size), so that coverage reaches the body checks
// instead of stopping at the magic.
// Seeds: corpus/rank_messages_fuzz, messages made by the encoders.
// Run: rank_messages_fuzz -max_total_time=60 [corpus dir]
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/rank_messages.h"
#include "supervisor/ranks/crash_message.h"
#include "supervisor/ranks/register_message.h"

namespace {

namespace proto = xpu_timer::proto;
namespace sup = xpu_timer::supervisor;

std::vector<uint8_t> packet_of(const uint8_t* data, size_t size) {
  if (size == 0) return {};
  const uint8_t mode = data[0] % 4;
  const uint8_t* rest = data + 1;
  const size_t n = size - 1;
  if (mode == 0) return std::vector<uint8_t>(rest, rest + n);
  size_t bytes = sizeof(proto::MsgHeader) + n;
  proto::MsgType type = proto::MsgType::kPythonException;
  if (mode == 1) {
    type = proto::MsgType::kRegister;
    bytes = sizeof(proto::RegisterMsg);
  } else if (mode == 2) {
    type = proto::MsgType::kCrashReport;
    bytes = sizeof(proto::CrashReportMsg);
  }
  std::vector<uint8_t> packet(bytes, 0);
  const proto::MsgHeader h = proto::make_header(type, static_cast<uint32_t>(bytes));
  std::memcpy(packet.data(), &h, sizeof(h));
  const size_t body = bytes - sizeof(h);
  std::memcpy(packet.data() + sizeof(h), rest, n < body ? n : body);
  return packet;
}

bool nul_within(const char* field, size_t size) {
  return std::memchr(field, '\0', size) != nullptr;
}

// Whether a decoder refused; a refusal must say why.
bool refused(bool ok, const std::string& error) {
  if (!ok && error.empty()) __builtin_trap();
  return !ok;
}

void check_register(const void* p, size_t len, std::optional<proto::MsgType> type) {
  proto::RegisterMsg msg;
  std::string error;
  const bool ok = proto::decode_register(p, len, &msg, &error);
  if (ok && type != proto::MsgType::kRegister) __builtin_trap();
  if (!refused(ok, error) && (!nul_within(msg.hostname, sizeof(msg.hostname)) ||
                              !nul_within(msg.status_path, sizeof(msg.status_path)))) {
    __builtin_trap();
  }
  error.clear();
  const std::optional<sup::RankRegistration> reg = sup::parse_register_message(p, len, &error);
  if (refused(reg.has_value(), error)) return;
  if (!ok || reg->pid <= 0 || reg->world_size < 1 || reg->world_size > sup::kMaxWorldSize ||
      reg->rank < 0 || reg->rank >= reg->world_size || reg->local_rank < 0 ||
      reg->local_rank >= reg->local_world_size || reg->status_path.empty() ||
      reg->status_path[0] != '/') {
    __builtin_trap();
  }
  // What the supervisor accepted, sent again by the encoder, reads the same.
  proto::RegisterInfo info;
  info.pid = reg->pid;
  info.identity = *reg;  // the registration is a RankIdentity with pid, host and page
  info.hostname = reg->host.c_str();
  info.status_path = reg->status_path.c_str();
  proto::RegisterMsg again;
  if (!proto::encode_register(info, &again)) __builtin_trap();  // decoded strings always fit
  const auto reg2 = sup::parse_register_message(&again, sizeof(again), &error);
  if (!reg2 || reg2->pid != reg->pid || reg2->rank != reg->rank ||
      reg2->local_rank != reg->local_rank || reg2->world_size != reg->world_size ||
      reg2->local_world_size != reg->local_world_size || reg2->group_rank != reg->group_rank ||
      reg2->host != reg->host || reg2->status_path != reg->status_path) {
    __builtin_trap();
  }
}

void check_crash_report(const void* p, size_t len, std::optional<proto::MsgType> type) {
  auto msg = std::make_unique<proto::CrashReportMsg>();  // ~14 KiB: not on the stack
  std::string error;
  const bool ok = proto::decode_crash_report(p, len, msg.get(), &error);
  if (ok && type != proto::MsgType::kCrashReport) __builtin_trap();
  if (!refused(ok, error) && (msg->nframes > static_cast<uint32_t>(proto::kCrashMaxFrames) ||
                              msg->nmodules > static_cast<uint32_t>(proto::kCrashMaxModules))) {
    __builtin_trap();
  }
  error.clear();
  const std::optional<sup::SignalReport> report = sup::parse_crash_report(p, len, &error);
  if (refused(report.has_value(), error)) return;
  if (!ok || report->frames.size() != msg->nframes || report->pid <= 0 ||
      report->thread_name.size() > sizeof(msg->thread_name)) {
    __builtin_trap();
  }
  for (const sup::NativeFrame& f : report->frames) {
    if (f.function.size() > static_cast<size_t>(proto::kCrashFuncBytes) ||
        f.module.size() > static_cast<size_t>(proto::kCrashModuleBytes)) {
      __builtin_trap();
    }
  }
}

void check_python_exception(const void* p, size_t len, std::optional<proto::MsgType> type) {
  std::string error;
  const std::optional<std::string_view> body = proto::decode_python_exception(p, len, &error);
  if (body && type != proto::MsgType::kPythonException) __builtin_trap();
  if (!refused(body.has_value(), error)) {
    const char* start = static_cast<const char*>(p) + sizeof(proto::MsgHeader);
    if (body->data() != start || body->size() != len - sizeof(proto::MsgHeader)) __builtin_trap();
    // The encoder sends the same body back in a message that decodes to it.
    const std::string again = proto::encode_python_exception(*body);
    if (again.empty()) __builtin_trap();  // it came in one packet: it fits in one
    std::string error2;
    const auto body2 = proto::decode_python_exception(again.data(), again.size(), &error2);
    if (!body2 || *body2 != *body) __builtin_trap();
  }
  error.clear();
  const auto report = sup::parse_python_exception(p, len, &error);
  if (refused(report.has_value(), error)) return;
  if (!body || report->pid <= 0) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> packet = packet_of(data, size);
  // A private copy of exactly the packet's length, so that ASan sees any read
  // past its end.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[packet.size() > 0 ? packet.size() : 1]);
  if (!packet.empty()) std::memcpy(copy.get(), packet.data(), packet.size());
  const void* p = copy.get();
  const size_t len = packet.size();

  std::string error;
  const std::optional<proto::MsgType> type = proto::decode_message(p, len, &error);
  refused(type.has_value(), error);
  check_register(p, len, type);
  check_crash_report(p, len, type);
  check_python_exception(p, len, type);
  return 0;
}
