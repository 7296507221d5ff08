#include "supervisor/crash_message.h"

#include <cstring>
#include <memory>

#include "common/protocol.h"

namespace xpu_timer::supervisor {
namespace {

std::string bounded(const char* field, size_t size) {
  const void* nul = memchr(field, '\0', size);
  return std::string(field, nul != nullptr ? static_cast<const char*>(nul) : field + size);
}

template <typename T>
std::optional<T> failure(std::string* error, const std::string& why) {
  if (error != nullptr) *error = why;
  return std::nullopt;
}

}  // namespace

std::optional<uint16_t> message_type(const void* data, size_t len, std::string* error) {
  proto::MsgHeader h;
  if (len < sizeof(h)) {
    return failure<uint16_t>(error, "message of " + std::to_string(len) + " bytes is too short");
  }
  memcpy(&h, data, sizeof(h));
  if (h.magic != proto::kMessageMagic) return failure<uint16_t>(error, "bad message magic");
  if (h.version != proto::kProtocolVersion) {
    return failure<uint16_t>(error, "protocol version " + std::to_string(h.version) +
                                        ", supervisor speaks " +
                                        std::to_string(proto::kProtocolVersion) +
                                        " (stale libxpu_timer_inject.so?)");
  }
  if (h.bytes != len || len > proto::kMaxMessageBytes) {
    return failure<uint16_t>(error, "message of " + std::to_string(len) + " bytes, header says " +
                                        std::to_string(h.bytes));
  }
  return h.type;
}

std::optional<SignalReport> parse_crash_report(const void* data, size_t len, std::string* error) {
  if (len != sizeof(proto::CrashReportMsg)) {
    return failure<SignalReport>(error, "crash report of " + std::to_string(len) +
                                            " bytes, expected " +
                                            std::to_string(sizeof(proto::CrashReportMsg)));
  }
  auto msg = std::make_unique<proto::CrashReportMsg>();  // ~14 KiB: not on the stack
  memcpy(msg.get(), data, sizeof(*msg));
  if (msg->header.type != static_cast<uint16_t>(proto::MsgType::kCrashReport)) {
    return failure<SignalReport>(error, "not a crash report");
  }
  if (msg->pid <= 0) return failure<SignalReport>(error, "bad pid " + std::to_string(msg->pid));
  if (msg->signal <= 0 || msg->signal >= 65) {
    return failure<SignalReport>(error, "bad signal " + std::to_string(msg->signal));
  }
  if (msg->nframes > static_cast<uint32_t>(proto::kCrashMaxFrames) ||
      msg->nmodules > static_cast<uint32_t>(proto::kCrashMaxModules)) {
    return failure<SignalReport>(error, "frame or module count out of range");
  }
  SignalReport r;
  r.pid = msg->pid;
  r.tid = msg->tid;
  r.rank = msg->rank;
  r.signal = msg->signal;
  r.si_code = msg->si_code;
  r.sender_pid = msg->sender_pid;
  r.sender_uid = msg->sender_uid;
  r.fault_addr = msg->fault_addr;
  r.time_unix_s = static_cast<double>(msg->realtime_ns) / 1e9;
  r.thread_name = bounded(msg->thread_name, sizeof(msg->thread_name));
  r.frames_truncated = (msg->flags & proto::kCrashFlagFramesTruncated) != 0;
  for (uint32_t i = 0; i < msg->nframes; ++i) {
    const proto::CrashFrame& f = msg->frames[i];
    NativeFrame out;
    out.pc = f.pc;
    if (f.module >= 0 && static_cast<uint32_t>(f.module) < msg->nmodules) {
      out.module = bounded(msg->modules[f.module].path, sizeof(msg->modules[f.module].path));
    }
    out.module_offset = f.module_offset;
    out.function = bounded(f.function, sizeof(f.function));
    out.func_offset = f.func_offset;
    r.frames.push_back(std::move(out));
  }
  return r;
}

std::optional<PythonExceptionReport> parse_python_exception(const void* data, size_t len,
                                                            std::string* error) {
  using nlohmann::json;
  const auto* bytes = static_cast<const char*>(data);
  const size_t header = sizeof(proto::MsgHeader);
  if (len <= header) return failure<PythonExceptionReport>(error, "empty exception report");
  try {
    const json doc = json::parse(bytes + header, bytes + len);
    PythonExceptionReport r;
    r.pid = doc.at("pid").get<pid_t>();
    r.rank = doc.at("rank").get<int>();
    r.time_unix_s = doc.value("time", 0.0);
    const json& type = doc.at("type");
    r.type_module = type.value("module", "builtins");
    r.type_qualname = type.at("qualname").get<std::string>();
    for (const json& c : type.value("mro", json::array())) {
      r.mro.emplace_back(c.at(0).get<std::string>(), c.at(1).get<std::string>());
    }
    r.message = doc.value("message", "");
    for (const json& a : doc.value("args", json::array())) r.args.push_back(a.get<std::string>());
    for (const json& f : doc.value("traceback", json::array())) {
      r.traceback.push_back({f.at("file").get<std::string>(), f.at("func").get<std::string>(),
                             f.at("line").is_number() ? f.at("line").get<int>() : 0});
    }
    r.formatted = doc.value("formatted", "");
    if (r.pid <= 0) return failure<PythonExceptionReport>(error, "bad pid");
    return r;
  } catch (const std::exception& e) {
    return failure<PythonExceptionReport>(error,
                                          std::string("bad exception report JSON: ") + e.what());
  }
}

}  // namespace xpu_timer::supervisor
