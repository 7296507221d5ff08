#include "stack/stack_cli_options.h"

#include <climits>

#include "common/cli_help.h"
#include "common/parse_number.h"

namespace xpu_timer::stack {
namespace {

constexpr FlagHelp kFlags[] = {
    {"--pid", "PID", "the process to stop, unwind and release", "required", nullptr},
    {"--json", "", "print the stack file (JSON) instead of text", "off", nullptr},
    {"--native-only", "", "only native frames (no Python)", "off", nullptr},
    {"--python-only", "", "only Python frames (no native unwinding)", "off", nullptr},
    {"--rank", "R", "rank recorded in the stack file", "0", nullptr},
    {"--world-size", "W", "world size recorded in the stack file", "1", nullptr},
    {"--out", "FILE", "also write the stack file (RRRRR-WWWWW.stacktrace) to FILE", "none",
     nullptr},
    {"--in-child", "", "attach from a forked child (a crash of ours never leaves PID stopped)",
     "off", nullptr},
    {"--stop-timeout-ms", "MS", "how long to wait for PID's threads to stop", "500", nullptr},
};

bool takes_value(const FlagHelp& f) { return *f.value != '\0'; }

StackCliParse error(std::string message) {
  StackCliParse r;
  r.status = StackCliParse::Status::kError;
  r.error = std::move(message);
  return r;
}

}  // namespace

std::string stack_cli_usage() {
  return "usage: xpu_timer_stack --pid PID [--json] [--native-only|--python-only]\n"
         "                       [--rank R --world-size W --out FILE] [--in-child]\n"
         "                       [--stop-timeout-ms MS]";
}

std::string stack_cli_help() {
  return stack_cli_usage() +
         "\nPrints the native and Python stacks of every thread of PID (like py-spy dump), or\n"
         "writes a stack file for xpu_timer_stacktrace_viewer. Attaching to a process that is\n"
         "not a descendant needs root or CAP_SYS_PTRACE (Yama ptrace_scope).\n\nOptions:\n" +
         format_flag_help(kFlags, sizeof(kFlags) / sizeof(kFlags[0])) +
         "No environment variable is read.\n";
}

StackCliParse parse_stack_cli(const std::vector<std::string>& args) {
  StackCliParse result;
  StackCliOptions& o = result.options;
  bool have_pid = false, native_only = false, python_only = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      result.status = StackCliParse::Status::kHelp;
      return result;
    }
    std::string name = arg, value;
    bool inline_value = false;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    const FlagHelp* flag = nullptr;
    for (const FlagHelp& f : kFlags) {
      if (name == f.name) flag = &f;
    }
    if (flag == nullptr) {
      if (arg.rfind("-", 0) != 0) return error("unexpected argument '" + arg + "' (see --help)");
      return error("unknown option '" + arg + "' (see --help)");
    }
    if (!takes_value(*flag) && inline_value) return error(name + " takes no value");
    if (takes_value(*flag) && !inline_value) {
      if (i + 1 >= args.size()) return error(name + " needs a value (" + flag->value + ")");
      value = args[++i];
    }
    std::optional<int64_t> v;  // a number the option takes
    if (name == "--pid") {
      if (!(v = parse_int(value, 1, INT_MAX)))
        return error("--pid: '" + value + "' is not a process id");
      o.pid = static_cast<pid_t>(*v);
      have_pid = true;
    } else if (name == "--json") {
      o.json = true;
    } else if (name == "--native-only") {
      native_only = true;
    } else if (name == "--python-only") {
      python_only = true;
    } else if (name == "--rank") {
      if (!(v = parse_int(value, 0, INT_MAX - 1))) {
        return error("--rank: '" + value + "' is not a rank (a whole number >= 0)");
      }
      o.collect.rank = static_cast<int>(*v);
    } else if (name == "--world-size") {
      if (!(v = parse_int(value, 1, INT_MAX))) {
        return error("--world-size: '" + value + "' is not a world size (a whole number >= 1)");
      }
      o.collect.world_size = static_cast<int>(*v);
    } else if (name == "--out") {
      if (value.empty()) return error("--out: the file name is empty");
      o.out = value;
    } else if (name == "--in-child") {
      o.in_child = true;
    } else if (name == "--stop-timeout-ms") {
      if (!(v = parse_int(value, 1, 3600 * 1000))) {
        return error("--stop-timeout-ms: '" + value +
                     "' is not a number of milliseconds (1 to 3600000)");
      }
      o.collect.stop_timeout = std::chrono::milliseconds(*v);
    }
  }
  if (!have_pid) return error("--pid is required: which process?");
  if (native_only && python_only)
    return error("--native-only and --python-only exclude each other");
  if (native_only) {
    o.collect.python = false;
    o.view = TextView::kNativeOnly;
  } else if (python_only) {
    o.collect.native = false;
    o.view = TextView::kPythonOnly;
  }
  if (o.collect.rank >= o.collect.world_size) {
    return error("--rank " + std::to_string(o.collect.rank) + " is not below --world-size " +
                 std::to_string(o.collect.world_size));
  }
  return result;
}

}  // namespace xpu_timer::stack
