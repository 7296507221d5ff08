// Validation of the crash messages a rank sends: the signal
// handler's fixed-size CrashReportMsg and the excepthook's header + JSON.
// Untrusted bytes in, a checked value or one line saying what is wrong out.
// Pure; never throws.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace xpu_timer::supervisor {

struct NativeFrame {
  uint64_t pc = 0;
  std::string module;          // path of the loaded object, "" when unknown
  uint64_t module_offset = 0;  // address inside the module's ELF vaddr space
  std::string function;        // as sent (mangled), "" when unknown
  uint64_t func_offset = 0;
  std::string build_id;     // hex GNU build-id of the module file, "" when unknown
  std::string name_source;  // the table that named it: "symtab", "dynsym", "" unnamed
};

struct SignalReport {
  pid_t pid = 0;
  pid_t tid = 0;
  int rank = 0;
  int signal = 0;
  int si_code = 0;
  pid_t sender_pid = 0;
  int sender_uid = 0;
  uint64_t fault_addr = 0;
  double time_unix_s = 0;
  std::string thread_name;
  bool frames_truncated = false;
  bool awaits_release = false;      // the rank waits in its handler for a descriptor's close
  std::vector<NativeFrame> frames;  // innermost first
  // False when the rank's handler got no siginfo from the kernel (another
  // handler called it): si_code, sender and fault address are then unknown
  // (zero), and `caller` is that handler.
  bool siginfo_from_kernel = true;
  std::optional<NativeFrame> caller;
  std::string siginfo_doubt;  // which test it failed, in words ("" when from the kernel)
};

struct PythonExceptionReport {
  pid_t pid = 0;
  int rank = 0;
  double time_unix_s = 0;
  std::string type_module;
  std::string type_qualname;
  std::vector<std::pair<std::string, std::string>> mro;  // (module, qualname), most derived first
  std::string message;
  std::vector<std::string> args;  // repr() of each argument
  struct Frame {
    std::string file;
    std::string func;
    int line = 0;
  };
  std::vector<Frame> traceback;  // outermost first, as Python lists it
  std::string formatted;         // traceback.format_exception() text
};

// The bytes of one message in, its checks in proto::decode_crash_report /
// decode_python_exception (common/rank_messages.h), then what the supervisor
// needs of it out.
std::optional<SignalReport> parse_crash_report(const void* data, size_t len, std::string* error);
std::optional<PythonExceptionReport> parse_python_exception(const void* data, size_t len,
                                                            std::string* error);

}  // namespace xpu_timer::supervisor
