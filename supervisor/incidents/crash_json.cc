#include "supervisor/incidents/crash_json.h"

#include <signal.h>
#include <string.h>

#include <cstdio>
#include <cstdlib>

#include "stack/user_frames.h"
#include "supervisor/analysis/op_json.h"
#include "supervisor/incidents/crash_symbolizer.h"
#include "supervisor/job/exit_status.h"

namespace xpu_timer::supervisor {
namespace {

using nlohmann::json;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool is_set(const char* v) { return v != nullptr && *v != '\0'; }

json exit_json(const CrashRecord& r) {
  if (!r.exit_known) return nullptr;
  if (r.exit_by_signal) {
    return {{"signal", r.exit_value}, {"signal_name", signal_name(r.exit_value)}};
  }
  return {{"exit_code", r.exit_value}};
}

// The innermost frame with a name that is not the C library's signal
// machinery: where the rank was when it died.
std::string where(const SignalReport& s) {
  for (const NativeFrame& f : s.frames) {
    if (f.function.empty()) continue;
    if (f.function == "raise" || f.function == "abort" || f.function == "pthread_kill" ||
        f.function.rfind("__pthread_kill", 0) == 0 || f.function == "gsignal") {
      continue;
    }
    return f.function;
  }
  return "";
}

std::string short_file(const std::string& file) {
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

// "sender unknown: our handler was reached through handleSignal
// (libtorch_cpu.so) without the kernel's siginfo".
std::string siginfo_unknown(const SignalReport& s) {
  std::string by = "another handler";
  if (s.caller) {
    const NativeFrame& c = *s.caller;
    by = c.function.empty() ? hex(c.pc) : c.function;
    if (!c.module.empty()) by += " (" + short_file(c.module) + ")";
  }
  return "sender unknown" + (s.siginfo_doubt.empty() ? "" : " (" + s.siginfo_doubt + ")") +
         ": our handler was reached through " + by + " without the kernel's siginfo";
}

json python_frames_json(const std::vector<stack::PythonFrame>& frames) {
  json out = json::array();
  for (const stack::PythonFrame& f : frames) {
    out.push_back({{"func", f.func}, {"file", f.file}, {"line", f.line}});
  }
  return out;
}

// The `python` object: the threads read while the rank waited, or null.
json python_json(const CrashRecord& r) {
  if (!r.python) return nullptr;
  const CrashPythonStacks& p = *r.python;
  json threads = json::array();
  for (const CrashPythonThread& t : p.threads) {
    threads.push_back({{"tid", t.tid},
                       {"name", t.name},
                       {"crashed", t.crashed},
                       {"holds_gil", t.holds_gil ? json(*t.holds_gil) : json(nullptr)},
                       {"frames", python_frames_json(t.frames)}});
  }
  return {{"version", p.python_version ? json(*p.python_version) : json(nullptr)},
          {"read", p.read_ok},
          {"python_process", p.python_process},
          {"threads", std::move(threads)},
          {"errors", p.errors},
          {"stopped_ms", p.stopped_ms}};
}

std::string frame_text(const stack::PythonFrame& f) {
  return f.func + " (" + short_file(f.file) + ":" + std::to_string(f.line) + ")";
}

// ", from train_step (train.py:48)": where Python was when the rank died,
// told by the user's innermost frame (as verdicts tell where a rank is:
// stack/user_frames.h), with the library function it was in when that is
// not the innermost (", from crash (train.py:40) via string_at
// (__init__.py:525)": a NULL read through ctypes).
std::string python_where(const CrashRecord& r) {
  if (!r.python || !r.python->python_process) return "";
  if (!r.python->read_ok) {
    return r.python->errors.empty() ? "" : "; Python stacks not read: " + r.python->errors[0];
  }
  for (const CrashPythonThread& t : r.python->threads) {
    if (!t.crashed) continue;
    if (t.frames.empty()) return ", in thread \"" + t.name + "\", which ran no Python";
    size_t user = 0;  // innermost first
    while (user < t.frames.size() && stack::is_library_python_file(t.frames[user].file)) ++user;
    if (user == t.frames.size()) return ", from " + frame_text(t.frames.front());
    std::string where = ", from " + frame_text(t.frames[user]);
    if (user != 0) where += " via " + frame_text(t.frames.front());
    return where;
  }
  return "";
}

// Why a rank that sent nothing died, as far as the supervisor can know.
std::string death_cause(const CrashRecord& r) {
  const bool sigkill = r.exit_known && r.exit_by_signal && r.exit_value == SIGKILL;
  const bool may_be_oom = sigkill || !r.exit_known;
  if (may_be_oom && !r.oom_evidence.empty()) {
    return std::string(sigkill ? "killed by SIGKILL" : "killed") +
           " (the OOM killer: " + r.oom_evidence + ")";
  }
  if (sigkill) return "killed by SIGKILL from outside";
  return "";
}

std::string op_sentence(const proto::OpRef& op) {
  std::string s = proto::op_name_str(static_cast<proto::OpName>(op.name));
  if (op.kind == static_cast<uint8_t>(proto::OpKind::kNccl)) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(op.comm_hash));
    s += " #" + std::to_string(op.seq) + " on comm " + buf;
  }
  return s;
}

}  // namespace

const char* crash_kind_name(CrashKind k) {
  switch (k) {
    case CrashKind::kSignal:
      return "signal";
    case CrashKind::kPythonException:
      return "python_exception";
    case CrashKind::kNoReport:
      return "died_without_report";
  }
  return "died_without_report";
}

PluginIdentity plugin_identity(const std::function<const char*(const char*)>& env) {
  PluginIdentity id;
  if (const char* v = env("POD_IP"); is_set(v)) id.ip = v;
  if (const char* v = env("POD_NAME"); is_set(v)) id.pod_name = v;
  for (const char* name : {"ENV_ARGO_WORKFLOW_NAME", "XPU_TIMER_JOB_NAME"}) {
    if (const char* v = env(name); is_set(v)) {
      id.job_name = v;
      break;
    }
  }
  return id;
}

PluginIdentity plugin_identity_from_env() {
  return plugin_identity([](const char* name) -> const char* { return std::getenv(name); });
}

json crash_json(const CrashRecord& r) {
  json j;
  j["kind"] = crash_kind_name(r.kind);
  j["rank"] = r.rank;
  j["pid"] = r.pid;
  j["host"] = r.host;
  j["time"] = r.time_unix_s;
  j["summary"] = crash_summary(r);
  j["outcome"] = r.terminated ? "terminated" : "crashed";
  j["cause"] = r.terminated ? json(r.terminated_cause) : json(nullptr);
  if (r.signal) {
    const SignalReport& s = *r.signal;
    j["signal"] = s.signal;
    j["signal_name"] = signal_name(s.signal);
    j["si_code"] = s.siginfo_from_kernel ? json(s.si_code) : json(nullptr);
    // si_addr is meaningful only for a fault the kernel raised.
    j["fault_address"] =
        s.siginfo_from_kernel && s.si_code > 0 ? json(hex(s.fault_addr)) : json(nullptr);
    j["sender"] = r.sender.empty() ? json(nullptr) : json(r.sender);
    // Where the signal's details come from: the kernel, or (unknown) a
    // handler installed after ours that called it without them.
    j["siginfo"] = s.siginfo_from_kernel ? json("kernel") : json(siginfo_unknown(s));
    j["tid"] = s.tid;
    j["thread_name"] = s.thread_name;
    json frames = json::array();
    for (const NativeFrame& f : s.frames) {
      frames.push_back(
          {{"pc", hex(f.pc)},
           {"function", frame_label(f)},
           {"function_offset", f.func_offset},
           {"module", f.module.empty() ? json(nullptr) : json(f.module)},
           {"module_offset", hex(f.module_offset)},
           {"build_id", f.build_id.empty() ? json(nullptr) : json(f.build_id)},
           {"named_from", f.name_source.empty() ? json(nullptr) : json(f.name_source)}});
    }
    j["frames"] = std::move(frames);
    j["frames_truncated"] = s.frames_truncated;
  } else {
    j["signal"] = nullptr;
  }
  if (r.exception) {
    const PythonExceptionReport& e = *r.exception;
    json tb = json::array();
    for (const auto& f : e.traceback) {
      tb.push_back({{"file", f.file}, {"func", f.func}, {"line", f.line}});
    }
    j["exception"] = {{"type", e.type_module == "builtins" ? e.type_qualname
                                                          : e.type_module + "." + e.type_qualname},
                      {"message", e.message},
                      {"traceback", std::move(tb)},
                      {"formatted", e.formatted}};
  } else {
    j["exception"] = nullptr;
  }
  j["python"] = python_json(r);
  j["exit_status"] = exit_json(r);
  j["kernel"] = r.kernel.empty() ? json(nullptr) : json(r.kernel);
  const std::string died = death_cause(r);
  j["death_cause"] = died.empty() ? json(nullptr) : json(died);
  j["oom_evidence"] = r.oom_evidence.empty() ? json(nullptr) : json(r.oom_evidence);
  j["last_inflight"] = r.page_ok && r.inflight_count > 0 ? op_json(r.oldest_inflight) : json(nullptr);
  j["last_completed"] =
      r.page_ok && r.completed_total > 0 ? op_json(r.last_completed) : json(nullptr);
  return j;
}

json plugin_input_json(const CrashRecord& r, const PluginIdentity& id) {
  const auto when = static_cast<long long>(r.time_unix_s);
  if (r.kind == CrashKind::kPythonException && r.exception) {
    const PythonExceptionReport& e = *r.exception;
    json mro = json::array();
    for (const auto& [module, qualname] : e.mro) mro.push_back({module, qualname});
    json tb = json::array();
    for (const auto& f : e.traceback) {
      tb.push_back({{"file", f.file}, {"func", f.func}, {"line", f.line}});
    }
    return {{"hook", "python"},
            {"infos",
             {{"time", when},
              {"rank", r.rank},
              {"ip", id.ip},
              {"pod_name", id.pod_name},
              {"job_name", id.job_name}}},
            {"exception",
             {{"module", e.type_module},
              {"qualname", e.type_qualname},
              {"mro", std::move(mro)},
              {"message", e.message},
              {"args", e.args},
              {"traceback", std::move(tb)}}}};
  }
  json frames = json::array();
  int sig = 0;
  if (r.signal) {
    sig = r.signal->signal;
    for (const NativeFrame& f : r.signal->frames) {
      // xpu-timer's three keys, then ours (a plugin written for xpu-timer
      // reads only the first three).
      frames.push_back({{"address", f.pc},
                        {"offset", f.func_offset},
                        {"function_name", frame_label(f)},
                        {"module", f.module},
                        {"module_offset", f.module_offset},
                        {"build_id", f.build_id}});
    }
  } else if (r.exit_known && r.exit_by_signal) {
    sig = r.exit_value;
  }
  json python_stacks = json::array();
  if (r.python) {
    for (const CrashPythonThread& t : r.python->threads) {
      python_stacks.push_back({{"thread_id", t.tid},
                               {"thread_name", t.name},
                               {"crashed", t.crashed},
                               {"holds_gil", t.holds_gil ? json(*t.holds_gil) : json(nullptr)},
                               {"frames", python_frames_json(t.frames)}});
    }
  }
  const std::string died = death_cause(r);
  return {{"hook", "cpp"},
          {"stack_infos",
           {{"signal", sig},
            {"rank", r.rank},
            {"ip", id.ip},
            {"pod_name", id.pod_name},
            {"job_name", id.job_name},
            {"time", when},
            {"frame_infos", std::move(frames)},
            {"python_stacks", std::move(python_stacks)},
            {"death_cause", died.empty() ? json(nullptr) : json(died)}}}};
}

std::string crash_summary(const CrashRecord& r) {
  return "rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) + ") " +
         crash_description(r);
}

std::string crash_description(const CrashRecord& r) {
  std::string s;
  if (r.kind == CrashKind::kSignal && r.signal) {
    const SignalReport& sig = *r.signal;
    s += "died of " + signal_name(sig.signal);
    if (sig.signal == SIGSEGV || sig.signal == SIGBUS || sig.signal == SIGFPE ||
        sig.signal == SIGILL) {
      if (sig.si_code > 0) s += " at address " + hex(sig.fault_addr);
    }
    if (!r.sender.empty()) s += " sent by " + r.sender;
    if (!sig.siginfo_from_kernel) s += " (" + siginfo_unknown(sig) + ")";
    const std::string in = where(sig);
    if (!in.empty()) s += " in " + in;
    return s + python_where(r);
  }
  if (r.kind == CrashKind::kPythonException && r.exception) {
    const PythonExceptionReport& e = *r.exception;
    s += "raised an uncaught " + e.type_qualname;
    if (!e.message.empty()) s += ": " + e.message.substr(0, 200);
    if (!e.traceback.empty()) {
      const auto& f = e.traceback.back();
      const size_t slash = f.file.rfind('/');
      s += " (in " + f.func + ", " +
           (slash == std::string::npos ? f.file : f.file.substr(slash + 1)) + ":" +
           std::to_string(f.line) + ")";
    }
    return s;
  }
  s += "died without a report";
  if (const std::string died = death_cause(r); !died.empty()) {
    s += ": " + died;
  } else if (r.exit_known) {
    s += r.exit_by_signal ? " (killed by " + signal_name(r.exit_value) + ")"
                          : " (exit code " + std::to_string(r.exit_value) + ")";
  } else {
    s += " (exit status unknown: not a child of the supervisor)";
  }
  if (r.page_ok && r.inflight_count > 0) {
    s += "; last in flight: " + op_sentence(r.oldest_inflight);
  } else if (r.page_ok && r.completed_total > 0) {
    s += "; nothing in flight, last completed: " + op_sentence(r.last_completed);
  }
  if (!r.kernel.empty()) s += "; kernel: " + r.kernel;
  return s;
}

}  // namespace xpu_timer::supervisor
