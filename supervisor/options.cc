#include "supervisor/options.h"

#include <strings.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/cli_help.h"
#include "supervisor/coordination/coordination_store.h"

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

bool parse_histograms(const std::string& v, bool* per_rank) {
  if (v != "node" && v != "rank") return false;
  *per_rank = v == "rank";
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

// The linger delays the supervisor's exit: keep it a matter of scrape
// intervals, never minutes.
constexpr double kMaxLingerS = 300;

// One row per option: the parser's list of known names and the help text
// come from here, so --help cannot forget a flag.
constexpr FlagHelp kFlags[] = {
    {"--port", "P", "HTTP port (/metrics, /hang, /ranks, dumps); 0 picks a free one", "18888",
     "XPU_TIMER_BASEPORT"},
    {"--host", "H", "IP address the HTTP server listens on; 0.0.0.0 for all", "127.0.0.1", nullptr},
    {"--hang-timeout", "S", "seconds an operation may be in flight before its rank is stuck", "300",
     "XPU_TIMER_HANG_TIMEOUT"},
    {"--stall-factor", "F",
     "the job is stalled when every rank lives with nothing in flight and nothing completes "
     "for F x the hang timeout (reported, never killed); 0: off",
     "2", "XPU_TIMER_STALL_FACTOR"},
    {"--dump-dir", "D", "folder for hang.json, stack dumps and crash reports", "./xpu_timer_dump",
     nullptr},
    {"--on-hang", "keep|kill", "on a hang, keep the job or end it once its stacks are in", "keep",
     "XPU_TIMER_HANG_KILL=1 means kill"},
    {"--poll-ms", "MS", "how often the ranks' status pages are read", "500", nullptr},
    {"--slow-window", "S", "seconds of collectives the straggler analysis (GET /slow) looks at",
     "30", "XPU_TIMER_SLOW_WINDOW_S"},
    {"--kill-grace", "S", "seconds from SIGTERM to SIGKILL when the job is ended", "10", nullptr},
    {"--metrics-linger", "S",
     "after the job ended, seconds /metrics still answers (job_running 0) if it was scraped "
     "during the job; a signal ends the wait; 0: none",
     "30", "XPU_TIMER_METRICS_LINGER_S"},
    {"--coordinator", "URL",
     "etcd://HOST:PORT (https://HOST:PORT for TLS): share the ranks' progress with the job's other nodes and decide hangs "
     "over the whole job; none: this node alone",
     "none", "XPU_TIMER_COORDINATOR"},
    {"--job-id", "ID", "names the job in the coordinator (the same on every node) and in job_name",
     "TORCHELASTIC_RUN_ID, torchrun's --rdzv-id, else default", "XPU_TIMER_JOB_ID"},
    {"--metrics-histograms", "node|rank",
     "latency, NVTX, Python function and step histograms of /metrics summed per node, or per "
     "rank (26 series per key and rank)",
     "node", "XPU_TIMER_METRICS_HISTOGRAMS"},
    {"--etcd-user", "NAME", "etcd user (auth enabled); its password from the file below or "
     "XPU_TIMER_ETCD_PASSWORD", "none", "XPU_TIMER_ETCD_USER"},
    {"--etcd-password-file", "F", "file whose first line is the etcd user's password", "none",
     "XPU_TIMER_ETCD_PASSWORD_FILE"},
    {"--etcd-ca-file", "F", "PEM CA of etcd's server certificate (https:// coordinator)",
     "the system's CAs", "XPU_TIMER_ETCD_CA_FILE"},
    {"--etcd-cert-file", "F", "PEM client certificate for etcd --client-cert-auth", "none",
     "XPU_TIMER_ETCD_CERT_FILE"},
    {"--etcd-key-file", "F", "PEM key of the client certificate", "none",
     "XPU_TIMER_ETCD_KEY_FILE"},
};

// Variables that set no option, listed after the options.
constexpr const char* kOtherEnv[][2] = {
    {"XPU_TIMER_DEBUG_MODE", "1: debug log lines"},
    {"XPU_TIMER_ETCD_PASSWORD", "the etcd user's password (or --etcd-password-file)"},
    {"XPU_TIMER_INJECT_LIB", "path of libxpu_timer_inject.so (default <bin>/../lib/)"},
    {"XPU_TIMER_EXIT_HOOK_PLUGIN", "comma-separated Python plugin files run on a crash"},
    {"XPU_TIMER_PLUGIN_TIMEOUT", "seconds a plugin may run (default 30)"},
    {"XPU_TIMER_PLUGIN_PYTHON", "interpreter of the plugins (default python3)"},
    {"XPU_TIMER_PLUGIN_HOST", "path of plugin_host.py (default <bin>/../share/xpu_timer/)"},
    {"XPU_TIMER_JOB_NAME",
     "job_name label of every metric (default: the job id, else "
     "<launcher>-<host>-<start time>)"},
    {"XPU_TIMER_METRICS_WINDOW_S", "window of the rate gauges (default 30)"},
    {"XPU_TIMER_METRICS_EXPIRY_S", "expiry of idle metric series (default 600)"},
    {"POD_NAME, POD_IP, ENV_ARGO_WORKFLOW_NAME", "pod_name, ip, job_name of crash plugins"},
};

}  // namespace

std::string usage_line() {
  return "usage: xpu_timer_supervisor [--port P] [--host H] [--hang-timeout S] [--stall-factor F] "
         "[--dump-dir D] "
         "[--on-hang keep|kill] [--poll-ms MS] [--slow-window S] [--kill-grace S] [--metrics-linger S] "
         "[--metrics-histograms node|rank] "
         "[--coordinator etcd://HOST:PORT] [--job-id ID] [--etcd-user NAME] "
         "[--etcd-password-file F] [--etcd-ca-file F] [--etcd-cert-file F] [--etcd-key-file F] "
         "-- COMMAND [ARGS...]";
}

std::string help_text() {
  std::string s = usage_line() + "\n";
  s += "Runs COMMAND (e.g. torchrun ... train.py) with libxpu_timer_inject.so preloaded, watches\n"
       "its ranks for hangs and crashes, and exits as the job exits.\n\nOptions:\n";
  s += format_flag_help(kFlags, sizeof(kFlags) / sizeof(kFlags[0]));
  s += "\nOther environment variables:\n";
  for (const auto& [name, meaning] : kOtherEnv) {
    s += "  " + std::string(name) + ": " + meaning + "\n";
  }
  return s;
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
    o.port_given = true;
  }
  if (const char* v = env("XPU_TIMER_HANG_TIMEOUT"); v != nullptr && *v != '\0') {
    if (!parse_seconds(v, 1e-3, &o.hang_timeout_s)) {
      return error(
          std::string("XPU_TIMER_HANG_TIMEOUT must be a positive number of seconds, got '") + v +
          "'");
    }
  }
  if (const char* v = env("XPU_TIMER_STALL_FACTOR"); v != nullptr && *v != '\0') {
    if (!parse_seconds(v, 0.0, &o.stall_factor)) {
      return error(std::string("XPU_TIMER_STALL_FACTOR must be a number >= 0, got '") + v + "'");
    }
  }
  if (const char* v = env("XPU_TIMER_HANG_KILL"); v != nullptr && *v != '\0') {
    if (is_true(v)) o.on_hang = OnHang::kKill;
  }
  if (const char* v = env("XPU_TIMER_METRICS_LINGER_S"); v != nullptr && *v != '\0') {
    if (!parse_seconds(v, 0.0, &o.metrics_linger_s) || o.metrics_linger_s > kMaxLingerS) {
      return error(std::string("XPU_TIMER_METRICS_LINGER_S must be a number of seconds 0-") +
                   std::to_string(static_cast<int>(kMaxLingerS)) + ", got '" + v + "'");
    }
  }
  if (const char* v = env("XPU_TIMER_SLOW_WINDOW_S"); v != nullptr && *v != '\0') {
    if (!parse_seconds(v, 1.0, &o.slow_window_s)) {
      return error(std::string("XPU_TIMER_SLOW_WINDOW_S must be a number of seconds >= 1, got '") +
                   v + "'");
    }
  }

  if (const char* v = env("XPU_TIMER_COORDINATOR"); v != nullptr) o.coordinator = v;
  StoreSecurity& sec = o.coordinator_security;
  for (const auto& [name, field] :
       {std::pair<const char*, std::string*>{"XPU_TIMER_ETCD_USER", &sec.user},
        {"XPU_TIMER_ETCD_PASSWORD", &sec.password},
        {"XPU_TIMER_ETCD_PASSWORD_FILE", &sec.password_file},
        {"XPU_TIMER_ETCD_CA_FILE", &sec.ca_file},
        {"XPU_TIMER_ETCD_CERT_FILE", &sec.cert_file},
        {"XPU_TIMER_ETCD_KEY_FILE", &sec.key_file}}) {
    if (const char* v = env(name); v != nullptr) *field = v;
  }
  if (const char* v = env("XPU_TIMER_METRICS_HISTOGRAMS"); v != nullptr && *v != '\0') {
    if (!parse_histograms(v, &o.metrics_per_rank_histograms)) {
      return error(std::string("XPU_TIMER_METRICS_HISTOGRAMS must be 'node' or 'rank', got '") + v +
                   "'");
    }
  }
  // torchrun's default run and rendezvous id is "none": no id at all.
  const auto named = [](const char* v) {
    return v != nullptr && *v != '\0' && std::string(v) != "none";
  };
  if (const char* v = env("XPU_TIMER_JOB_ID"); v != nullptr && *v != '\0') {
    o.job_id = v;
  } else if (const char* run = env("TORCHELASTIC_RUN_ID"); named(run)) {
    o.job_id = run;
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
    bool known = false;
    for (const FlagHelp& f : kFlags) known = known || name == f.name;
    if (!known) return error("unknown option '" + arg + "' (see --help)");
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
      o.port_given = true;
    } else if (name == "--host") {
      if (value.empty()) return error("--host must not be empty");
      o.host = value;
    } else if (name == "--hang-timeout") {
      if (!parse_seconds(value, 1e-3, &o.hang_timeout_s)) {
        return error("--hang-timeout must be a positive number of seconds, got '" + value + "'");
      }
    } else if (name == "--stall-factor") {
      if (!parse_seconds(value, 0.0, &o.stall_factor)) {
        return error("--stall-factor must be a number >= 0 (0: off), got '" + value + "'");
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
    } else if (name == "--slow-window") {
      if (!parse_seconds(value, 1.0, &o.slow_window_s)) {
        return error("--slow-window must be a number of seconds >= 1, got '" + value + "'");
      }
    } else if (name == "--kill-grace") {
      if (!parse_seconds(value, 0.0, &o.kill_grace_s)) {
        return error("--kill-grace must be a number of seconds >= 0, got '" + value + "'");
      }
    } else if (name == "--coordinator") {
      o.coordinator = value;
    } else if (name == "--etcd-user") {
      sec.user = value;
    } else if (name == "--etcd-password-file") {
      sec.password_file = value;
    } else if (name == "--etcd-ca-file") {
      sec.ca_file = value;
    } else if (name == "--etcd-cert-file") {
      sec.cert_file = value;
    } else if (name == "--etcd-key-file") {
      sec.key_file = value;
    } else if (name == "--job-id") {
      if (value.empty()) return error("--job-id must not be empty");
      o.job_id = value;
    } else if (name == "--metrics-histograms") {
      if (!parse_histograms(value, &o.metrics_per_rank_histograms)) {
        return error("--metrics-histograms must be 'node' or 'rank', got '" + value + "'");
      }
    } else if (name == "--metrics-linger") {
      if (!parse_seconds(value, 0.0, &o.metrics_linger_s) || o.metrics_linger_s > kMaxLingerS) {
        return error("--metrics-linger must be a number of seconds 0-" +
                     std::to_string(static_cast<int>(kMaxLingerS)) + ", got '" + value + "'");
      }
    }
  }
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (o.command.empty()) return error("no command to run (put it after --)");
  if (o.job_id.empty()) {  // torchrun's rendezvous id names the job on every node
    for (size_t k = 0; k < o.command.size(); ++k) {
      const std::string& a = o.command[k];
      for (const char* flag : {"--rdzv-id", "--rdzv_id"}) {
        const std::string f = flag;
        if (a == f && k + 1 < o.command.size()) o.job_id = o.command[k + 1];
        if (a.rfind(f + "=", 0) == 0) o.job_id = a.substr(f.size() + 1);
      }
    }
    if (o.job_id.empty() && named(env("PET_RDZV_ID"))) o.job_id = env("PET_RDZV_ID");
    if (o.job_id == "none") o.job_id.clear();
  }
  o.job_id_found = !o.job_id.empty();
  if (o.job_id.empty()) o.job_id = "default";
  if (o.coordinator == "none") o.coordinator.clear();
  if (!o.coordinator.empty()) {
    StoreEndpoint endpoint;
    std::string why;
    if (!parse_store_url(o.coordinator, &endpoint, &why)) return error(why);
    if (!check_store_security(endpoint, sec, &why)) return error(why);
  }
  for (const char c : o.job_id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return error("the job id must be letters, digits, '.', '_' or '-', got '" + o.job_id + "'");
    }
  }
  return result;
}

std::string options_summary(const Options& o) {
  std::string command;
  for (const std::string& a : o.command) command += (command.empty() ? "" : " ") + a;
  char timeout[32];
  std::snprintf(timeout, sizeof(timeout), "%.3g", o.hang_timeout_s);
  char stall[48] = "no stall detection";
  if (o.stall_factor > 0) {
    std::snprintf(stall, sizeof(stall), "stall after %.3g s", o.stall_factor * o.hang_timeout_s);
  }
  return "supervising '" + command + "': port " + std::to_string(o.port) + " on " + o.host +
         ", dump dir " + o.dump_dir + ", hang timeout " + timeout + " s, " + stall + ", on hang " +
         (o.on_hang == OnHang::kKill ? "kill" : "keep");
}

}  // namespace xpu_timer::supervisor
