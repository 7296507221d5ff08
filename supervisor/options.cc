#include "supervisor/options.h"

#include <strings.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace xpu_timer::supervisor {
namespace {

bool parse_int(const std::string& text, long lo, long hi, long* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parse_seconds(const std::string& text, double lo, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < lo || v > 1e9) return false;
  *out = v;
  return true;
}

bool is_true(const std::string& v) {
  for (const char* t : {"1", "true", "yes", "on"}) {
    if (strcasecmp(v.c_str(), t) == 0) return true;
  }
  return false;
}

ParseResult error(std::string message) {
  ParseResult r;
  r.status = ParseResult::Status::kError;
  r.error = std::move(message);
  return r;
}

}  // namespace

std::string usage_line() {
  return "usage: xpu_timer_supervisor [--port P] [--host H] [--hang-timeout S] [--dump-dir D] "
         "[--on-hang keep|kill] [--poll-ms MS] [--kill-grace S] -- COMMAND [ARGS...]";
}

ParseResult parse_options(const std::vector<std::string>& args, const EnvLookup& env) {
  ParseResult result;
  Options& o = result.options;

  if (const char* v = env("XPU_TIMER_BASEPORT"); v != nullptr && *v != '\0') {
    long port = 0;
    if (!parse_int(v, 0, 65535, &port)) {
      return error(std::string("XPU_TIMER_BASEPORT must be a port number 0-65535, got '") + v +
                   "'");
    }
    o.port = static_cast<int>(port);
  }
  if (const char* v = env("XPU_TIMER_HANG_TIMEOUT"); v != nullptr && *v != '\0') {
    if (!parse_seconds(v, 1e-3, &o.hang_timeout_s)) {
      return error(
          std::string("XPU_TIMER_HANG_TIMEOUT must be a positive number of seconds, got '") + v +
          "'");
    }
  }
  if (const char* v = env("XPU_TIMER_HANG_KILL"); v != nullptr && *v != '\0') {
    if (is_true(v)) o.on_hang = OnHang::kKill;
  }

  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      result.status = ParseResult::Status::kHelp;
      return result;
    }
    if (arg.rfind("-", 0) != 0 || arg == "-") break;  // the command starts here

    std::string name = arg;
    std::string value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    static const char* const kKnown[] = {"--port",    "--host",    "--hang-timeout", "--dump-dir",
                                         "--on-hang", "--poll-ms", "--kill-grace"};
    bool known = false;
    for (const char* k : kKnown) known = known || name == k;
    if (!known) return error("unknown option '" + arg + "'");
    if (!has_value) {
      if (i + 1 >= args.size()) return error("option " + name + " needs a value");
      value = args[++i];
    }

    if (name == "--port") {
      long port = 0;
      if (!parse_int(value, 0, 65535, &port)) {
        return error("--port must be a port number 0-65535, got '" + value + "'");
      }
      o.port = static_cast<int>(port);
    } else if (name == "--host") {
      if (value.empty()) return error("--host must not be empty");
      o.host = value;
    } else if (name == "--hang-timeout") {
      if (!parse_seconds(value, 1e-3, &o.hang_timeout_s)) {
        return error("--hang-timeout must be a positive number of seconds, got '" + value + "'");
      }
    } else if (name == "--dump-dir") {
      if (value.empty()) return error("--dump-dir must not be empty");
      o.dump_dir = value;
    } else if (name == "--on-hang") {
      if (value == "keep") {
        o.on_hang = OnHang::kKeep;
      } else if (value == "kill") {
        o.on_hang = OnHang::kKill;
      } else {
        return error("--on-hang must be 'keep' or 'kill', got '" + value + "'");
      }
    } else if (name == "--poll-ms") {
      long ms = 0;
      if (!parse_int(value, 1, 3600 * 1000, &ms)) {
        return error("--poll-ms must be a whole number of milliseconds >= 1, got '" + value + "'");
      }
      o.poll_ms = static_cast<int>(ms);
    } else if (name == "--kill-grace") {
      if (!parse_seconds(value, 0.0, &o.kill_grace_s)) {
        return error("--kill-grace must be a number of seconds >= 0, got '" + value + "'");
      }
    }
  }
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (o.command.empty()) return error("no command to run (put it after --)");
  return result;
}

}  // namespace xpu_timer::supervisor
