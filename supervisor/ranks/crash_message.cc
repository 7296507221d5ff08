#include "supervisor/ranks/crash_message.h"

#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>

#include "common/rank_messages.h"

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

// A JSON integer that fits an int. nlohmann's get<int>() converts 1e10 or
// 1.5 too, and out of range that conversion is undefined behaviour.
bool int_value(const nlohmann::json& v, int* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT_MAX)) return false;
    *out = static_cast<int>(u);
    return true;
  }
  if (!v.is_number_integer()) return false;
  const int64_t s = v.get<int64_t>();
  if (s < INT_MIN || s > INT_MAX) return false;
  *out = static_cast<int>(s);
  return true;
}

const char* siginfo_doubt_text(uint32_t doubt) {
  switch (static_cast<proto::CrashSiginfoDoubt>(doubt)) {
    case proto::CrashSiginfoDoubt::kNoSaSiginfo:
      return "the handler installed for it has no SA_SIGINFO";
    case proto::CrashSiginfoDoubt::kNoPointers:
      return "no siginfo was passed";
    case proto::CrashSiginfoDoubt::kNotInFrame:
      return "the siginfo is not in the kernel's signal frame";
    case proto::CrashSiginfoDoubt::kSigno:
      return "the siginfo names another signal";
    case proto::CrashSiginfoDoubt::kCode:
      return "the siginfo's code is none the kernel uses";
    case proto::CrashSiginfoDoubt::kPid:
      return "the siginfo's sender pid is no pid";
    case proto::CrashSiginfoDoubt::kNone:
      break;
  }
  return "";
}

}  // namespace

std::optional<SignalReport> parse_crash_report(const void* data, size_t len, std::string* error) {
  auto msg = std::make_unique<proto::CrashReportMsg>();  // ~14 KiB: not on the stack
  if (!proto::decode_crash_report(data, len, msg.get(), error)) return std::nullopt;
  if (msg->pid <= 0) return failure<SignalReport>(error, "bad pid " + std::to_string(msg->pid));
  if (msg->signal <= 0 || msg->signal >= 65) {
    return failure<SignalReport>(error, "bad signal " + std::to_string(msg->signal));
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
  r.awaits_release = (msg->flags & proto::kCrashFlagAwaitsRelease) != 0;
  const auto frame = [&](const proto::CrashFrame& f) {
    NativeFrame out;
    out.pc = f.pc;
    if (f.module >= 0 && static_cast<uint32_t>(f.module) < msg->nmodules) {
      out.module = bounded(msg->modules[f.module].path, sizeof(msg->modules[f.module].path));
    }
    out.module_offset = f.module_offset;
    out.function = bounded(f.function, sizeof(f.function));
    out.func_offset = f.func_offset;
    return out;
  };
  for (uint32_t i = 0; i < msg->nframes; ++i) r.frames.push_back(frame(msg->frames[i]));
  if (msg->flags & proto::kCrashFlagSiginfoNotKernels) {
    // Whatever the fields hold, the kernel did not say it.
    r.siginfo_from_kernel = false;
    r.si_code = 0;
    r.sender_pid = 0;
    r.sender_uid = 0;
    r.fault_addr = 0;
    if (msg->caller.pc != 0) r.caller = frame(msg->caller);
    r.siginfo_doubt = siginfo_doubt_text(msg->siginfo_doubt);
  }
  return r;
}

std::optional<PythonExceptionReport> parse_python_exception(const void* data, size_t len,
                                                            std::string* error) {
  using nlohmann::json;
  const std::optional<std::string_view> body = proto::decode_python_exception(data, len, error);
  if (!body) return std::nullopt;
  try {
    const json doc = json::parse(body->begin(), body->end());
    PythonExceptionReport r;
    if (!int_value(doc.at("pid"), &r.pid) || r.pid <= 0) {
      return failure<PythonExceptionReport>(error, "bad pid");
    }
    if (!int_value(doc.at("rank"), &r.rank)) return failure<PythonExceptionReport>(error, "bad rank");
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
      int line = 0;
      if (!int_value(f.at("line"), &line)) line = 0;
      r.traceback.push_back({f.at("file").get<std::string>(), f.at("func").get<std::string>(), line});
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
