#include "supervisor/options.h"

#include <strings.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <variant>

#include "common/cli_help.h"
#include "common/parse_number.h"
#include "supervisor/coordination/coordination_store.h"

namespace xpu_timer::supervisor {
namespace {

// How a setting's text becomes its value; ranges are inclusive.
struct Integer {
  int Options::*field;
  int64_t min, max;
  bool Options::*given = nullptr;  // set when the value came from a flag or variable
};
struct Number {
  double Options::*field;
  double min, max;
};
struct Text {
  std::string* (*field)(Options&);
  bool not_empty;           // "" is an error (an unset or empty variable means the default)
  const char* empty_means;  // what the empty default stands for, in --help and the docs
};
// One of two words; `env_switch`: the variable is a switch ("1", "true",
// "yes", "on") that selects `second`, any other value nothing.
struct Choice {
  const char* first;
  const char* second;
  bool (*is_second)(const Options&);
  void (*set_second)(Options&, bool);
  bool env_switch = false;
};

// One row per setting: the environment pass, the flag pass, their errors,
// --help, the usage line and the docs' table all come from here. Defaults
// are Options' member initialisers.
struct Setting {
  const char* flag;     // "--port"; nullptr: environment only
  const char* metavar;  // "P"
  const char* env;      // "XPU_TIMER_BASEPORT"; nullptr: command line only
  const char* meaning;  // one line of --help
  // The error: "<flag or variable> must be <expects>, got '<text>'" (Text
  // and Choice rows say it themselves).
  const char* expects;
  std::variant<Integer, Number, Text, Choice> value;
};

// Seconds beyond this are a typo, not a setting.
constexpr double kMaxSeconds = 1e9;

const Setting kSettings[] = {
    {"--port", "P", "XPU_TIMER_BASEPORT",
     "HTTP port (/metrics, /hang, /ranks, dumps); 0 picks a free one", "a port number 0-65535",
     Integer{&Options::port, 0, 65535, &Options::port_given}},
    {"--host", "H", nullptr, "IP address the HTTP server listens on; 0.0.0.0 for all", nullptr,
     Text{[](Options& o) { return &o.host; }, true, "none"}},
    {"--hang-timeout", "S", "XPU_TIMER_HANG_TIMEOUT",
     "seconds an operation may be in flight before its rank is stuck",
     "a positive number of seconds", Number{&Options::hang_timeout_s, 1e-3, kMaxSeconds}},
    {"--stall-factor", "F", "XPU_TIMER_STALL_FACTOR",
     "the job is stalled when every rank lives with nothing in flight and nothing completes "
     "for F x the hang timeout (reported, never killed); 0: off",
     "a number >= 0 (0: off)", Number{&Options::stall_factor, 0, kMaxSeconds}},
    {"--dump-dir", "D", nullptr, "folder for hang.json, stack dumps and crash reports", nullptr,
     Text{[](Options& o) { return &o.dump_dir; }, true, "none"}},
    {"--on-hang", "keep|kill", "XPU_TIMER_HANG_KILL",
     "on a hang, keep the job or end it once its stacks are in", nullptr,
     Choice{"keep", "kill", [](const Options& o) { return o.on_hang == OnHang::kKill; },
            [](Options& o, bool kill) { o.on_hang = kill ? OnHang::kKill : OnHang::kKeep; },
            /*env_switch=*/true}},
    {"--poll-ms", "MS", nullptr, "how often the ranks' status pages are read",
     "a whole number of milliseconds >= 1", Integer{&Options::poll_ms, 1, 3600 * 1000}},
    {"--slow-window", "S", "XPU_TIMER_SLOW_WINDOW_S",
     "seconds of collectives the straggler analysis (GET /slow) looks at",
     "a number of seconds >= 1", Number{&Options::slow_window_s, 1, kMaxSeconds}},
    {"--kill-grace", "S", nullptr, "seconds from SIGTERM to SIGKILL when the job is ended",
     "a number of seconds >= 0", Number{&Options::kill_grace_s, 0, kMaxSeconds}},
    // The linger delays the supervisor's exit: a matter of scrape intervals,
    // never minutes.
    {"--metrics-linger", "S", "XPU_TIMER_METRICS_LINGER_S",
     "after the job ended, seconds /metrics still answers (job_running 0) if it was scraped "
     "during the job; a signal ends the wait; 0: none",
     "a number of seconds 0-300", Number{&Options::metrics_linger_s, 0, 300}},
    {"--coordinator", "URL", "XPU_TIMER_COORDINATOR",
     "etcd://HOST:PORT (https://HOST:PORT for TLS): share the ranks' progress with the job's "
     "other nodes and decide hangs over the whole job; none: this node alone",
     nullptr, Text{[](Options& o) { return &o.coordinator; }, false, "none"}},
    {"--job-id", "ID", "XPU_TIMER_JOB_ID",
     "names the job in the coordinator (the same on every node) and in job_name", nullptr,
     Text{[](Options& o) { return &o.job_id; }, true,
          "TORCHELASTIC_RUN_ID, torchrun's --rdzv-id, else default"}},
    {"--metrics-histograms", "node|rank", "XPU_TIMER_METRICS_HISTOGRAMS",
     "latency, NVTX, Python function and step histograms of /metrics summed per node, or per "
     "rank (26 series per key and rank)",
     nullptr,
     Choice{"node", "rank", [](const Options& o) { return o.metrics_per_rank_histograms; },
            [](Options& o, bool rank) { o.metrics_per_rank_histograms = rank; }}},
    {nullptr, nullptr, "XPU_TIMER_METRICS_WINDOW_S",
     "seconds the rate gauges of /metrics (FLOP/s, bandwidths, calls/s) look back",
     "a positive number of seconds", Number{&Options::metrics_window_s, 1e-3, kMaxSeconds}},
    {nullptr, nullptr, "XPU_TIMER_METRICS_EXPIRY_S",
     "seconds an operation key of /metrics may stay idle before it is no longer exported",
     "a positive number of seconds", Number{&Options::metrics_expiry_s, 1e-3, kMaxSeconds}},
    {nullptr, nullptr, "XPU_TIMER_PLUGIN_TIMEOUT",
     "seconds an exit-hook plugin (XPU_TIMER_EXIT_HOOK_PLUGIN) may run before it is killed",
     "a positive number of seconds", Number{&Options::plugin_timeout_s, 1e-3, kMaxSeconds}},
    {nullptr, nullptr, "XPU_TIMER_EXIT_HOOK_PLUGIN",
     "comma-separated Python plugin files run on a crash", nullptr,
     Text{[](Options& o) { return &o.exit_hook_plugins; }, false, "none"}},
    {nullptr, nullptr, "XPU_TIMER_PLUGIN_PYTHON", "interpreter of the exit-hook plugins", nullptr,
     Text{[](Options& o) { return &o.plugin_python; }, false, ""}},
    {nullptr, nullptr, "XPU_TIMER_PLUGIN_HOST", "path of the plugins' host script", nullptr,
     Text{[](Options& o) { return &o.plugin_host; }, false,
          "<bin>/../share/xpu_timer/plugin_host.py"}},
    {nullptr, nullptr, "XPU_TIMER_INJECT_LIB", "the library preloaded into the ranks", nullptr,
     Text{[](Options& o) { return &o.inject_lib; }, false, "<bin>/../lib/libxpu_timer_inject.so"}},
    {"--etcd-user", "NAME", "XPU_TIMER_ETCD_USER",
     "etcd user (auth enabled); its password from the file below or XPU_TIMER_ETCD_PASSWORD",
     nullptr, Text{[](Options& o) { return &o.coordinator_security.user; }, false, "none"}},
    {nullptr, nullptr, "XPU_TIMER_ETCD_PASSWORD",
     "the etcd user's password (or --etcd-password-file)", nullptr,
     Text{[](Options& o) { return &o.coordinator_security.password; }, false, "none"}},
    {"--etcd-password-file", "F", "XPU_TIMER_ETCD_PASSWORD_FILE",
     "file whose first line is the etcd user's password", nullptr,
     Text{[](Options& o) { return &o.coordinator_security.password_file; }, false, "none"}},
    {"--etcd-ca-file", "F", "XPU_TIMER_ETCD_CA_FILE",
     "PEM CA of etcd's server certificate (https:// coordinator)", nullptr,
     Text{[](Options& o) { return &o.coordinator_security.ca_file; }, false, "the system's CAs"}},
    {"--etcd-cert-file", "F", "XPU_TIMER_ETCD_CERT_FILE",
     "PEM client certificate for etcd --client-cert-auth", nullptr,
     Text{[](Options& o) { return &o.coordinator_security.cert_file; }, false, "none"}},
    {"--etcd-key-file", "F", "XPU_TIMER_ETCD_KEY_FILE", "PEM key of the client certificate",
     nullptr, Text{[](Options& o) { return &o.coordinator_security.key_file; }, false, "none"}},
};

// Variables read by other parts of the supervisor, listed after the options.
constexpr const char* kOtherEnv[][2] = {
    {"XPU_TIMER_DEBUG_MODE", "1: debug log lines"},
    {"XPU_TIMER_JOB_NAME",
     "job_name label of every metric (default: the job id, else "
     "<launcher>-<host>-<start time>)"},
    {"POD_NAME, POD_IP, ENV_ARGO_WORKFLOW_NAME", "pod_name, ip, job_name of crash plugins"},
};

bool is_true(const char* v) {
  for (const char* t : {"1", "true", "yes", "on"}) {
    if (strcasecmp(v, t) == 0) return true;
  }
  return false;
}

std::string quoted_choices(const Choice& c) {
  return std::string("'") + c.first + "' or '" + c.second + "'";
}

// Sets `s` from `text`, which `source` (its flag or variable) gave: "" or
// the error line.
std::string apply(const Setting& s, const std::string& source, const std::string& text,
                  Options* o) {
  const std::string bad =
      source + " must be " + (s.expects ? s.expects : "") + ", got '" + text + "'";
  if (const auto* v = std::get_if<Integer>(&s.value)) {
    const std::optional<int64_t> n = parse_int(text, v->min, v->max);
    if (!n) return bad;
    o->*v->field = static_cast<int>(*n);
    if (v->given != nullptr) o->*v->given = true;
  } else if (const auto* v = std::get_if<Number>(&s.value)) {
    const std::optional<double> x = parse_real(text, v->min, v->max);
    if (!x) return bad;
    o->*v->field = *x;
  } else if (const auto* v = std::get_if<Text>(&s.value)) {
    if (v->not_empty && text.empty()) return source + " must not be empty";
    *v->field(*o) = text;
  } else if (const auto* v = std::get_if<Choice>(&s.value)) {
    if (text != v->first && text != v->second) {
      return source + " must be " + quoted_choices(*v) + ", got '" + text + "'";
    }
    v->set_second(*o, text == v->second);
  }
  return "";
}

// The value of a default-constructed Options, as --help and the docs show it.
std::string default_text(const Setting& s) {
  Options defaults;
  if (const auto* v = std::get_if<Integer>(&s.value)) return std::to_string(defaults.*v->field);
  if (const auto* v = std::get_if<Number>(&s.value)) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", defaults.*v->field);
    return text;
  }
  if (const auto* v = std::get_if<Text>(&s.value)) {
    const std::string& value = *v->field(defaults);
    return value.empty() ? v->empty_means : value;
  }
  const auto& c = std::get<Choice>(s.value);
  return c.is_second(defaults) ? c.second : c.first;
}

// How the variable sets the option, as --help says it.
std::string env_text(const Setting& s) {
  const auto* c = std::get_if<Choice>(&s.value);
  if (c != nullptr && c->env_switch) return std::string(s.env) + "=1 means " + c->second;
  return s.env;
}

// The value a setting takes, in words, for the docs.
std::string value_text(const Setting& s) {
  if (s.expects != nullptr) return s.expects;
  if (const auto* c = std::get_if<Choice>(&s.value)) return quoted_choices(*c);
  return std::get<Text>(s.value).not_empty ? "not empty" : "text";
}

ParseResult error(std::string message) {
  ParseResult r;
  r.status = ParseResult::Status::kError;
  r.error = std::move(message);
  return r;
}

const Setting* find_setting(const std::string& flag) {
  for (const Setting& s : kSettings) {
    if (s.flag != nullptr && flag == s.flag) return &s;
  }
  return nullptr;
}

}  // namespace

std::optional<SettingRange> setting_range(const std::string& flag) {
  const Setting* s = find_setting(flag);
  if (s == nullptr) return std::nullopt;
  SettingRange r;
  r.expects = value_text(*s);
  if (const auto* v = std::get_if<Integer>(&s->value)) {
    r.min = static_cast<double>(v->min);
    r.max = static_cast<double>(v->max);
  } else if (const auto* v = std::get_if<Number>(&s->value)) {
    r.min = v->min;
    r.max = v->max;
  } else if (const auto* v = std::get_if<Choice>(&s->value)) {
    r.choice = true;
    r.first = v->first;
    r.second = v->second;
  }
  return r;
}

std::string set_setting(const std::string& flag, const std::string& source, const std::string& text,
                        Options* o) {
  const Setting* s = find_setting(flag);
  if (s == nullptr) return source + " is not a setting";
  return apply(*s, source, text, o);
}

std::string usage_line() {
  std::string s = "usage: xpu_timer_supervisor";
  for (const Setting& f : kSettings) {
    if (f.flag != nullptr) s += std::string(" [") + f.flag + " " + f.metavar + "]";
  }
  return s + " -- COMMAND [ARGS...]";
}

std::string help_text() {
  std::string s = usage_line() + "\n";
  s += "Runs COMMAND (e.g. torchrun ... train.py) with libxpu_timer_inject.so preloaded, watches\n"
       "its ranks for hangs and crashes, and exits as the job exits.\n\nOptions:\n";
  std::vector<std::string> texts;  // FlagHelp points into these
  texts.reserve(2 * std::size(kSettings));
  std::vector<FlagHelp> flags;
  for (const Setting& f : kSettings) {
    if (f.flag == nullptr) continue;
    const std::string& shown = texts.emplace_back(default_text(f));
    const char* env = f.env != nullptr ? texts.emplace_back(env_text(f)).c_str() : nullptr;
    flags.push_back(FlagHelp{f.flag, f.metavar, f.meaning, shown.c_str(), env});
  }
  s += format_flag_help(flags.data(), flags.size());
  s += "\nOther environment variables:\n";
  for (const Setting& f : kSettings) {
    if (f.flag == nullptr) {
      s += std::string("  ") + f.env + ": " + f.meaning + "; default " + default_text(f) + "\n";
    }
  }
  for (const auto& [name, meaning] : kOtherEnv) {
    s += "  " + std::string(name) + ": " + meaning + "\n";
  }
  return s;
}

std::string settings_markdown() {
  const auto cell = [](const std::string& text) {
    std::string out;
    for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  const auto code = [&](const std::string& text) {
    return text.empty() ? std::string() : "`" + cell(text) + "`";
  };
  std::string s =
      "| flag | variable | default | value | meaning |\n| --- | --- | --- | --- | --- |\n";
  for (const Setting& f : kSettings) {
    const std::string flag = f.flag != nullptr ? std::string(f.flag) + " " + f.metavar : "";
    std::string env = f.env != nullptr ? code(f.env) : "";
    if (const auto* c = std::get_if<Choice>(&f.value); c != nullptr && c->env_switch) {
      env += std::string(" (`1`: ") + c->second + ")";
    }
    s += "| " + code(flag) + " | " + env + " | " + cell(default_text(f)) + " | " +
         cell(value_text(f)) + " | " + cell(f.meaning) + " |\n";
  }
  return s;
}

ParseResult parse_options(const std::vector<std::string>& args, const EnvLookup& env) {
  ParseResult result;
  Options& o = result.options;

  for (const Setting& f : kSettings) {
    const char* v = f.env != nullptr ? env(f.env) : nullptr;
    if (v == nullptr || *v == '\0') continue;
    const auto* c = std::get_if<Choice>(&f.value);
    if (c != nullptr && c->env_switch) {
      if (is_true(v)) c->set_second(o, true);
      continue;
    }
    if (std::string why = apply(f, f.env, v, &o); !why.empty()) return error(why);
  }
  // torchrun's default run and rendezvous id is "none": no id at all.
  const auto named = [](const char* v) {
    return v != nullptr && *v != '\0' && std::string(v) != "none";
  };
  if (o.job_id.empty()) {
    if (const char* run = env("TORCHELASTIC_RUN_ID"); named(run)) o.job_id = run;
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
    const Setting* setting = find_setting(name);
    if (setting == nullptr) return error("unknown option '" + arg + "' (see --help)");
    if (!has_value) {
      if (i + 1 >= args.size()) return error("option " + name + " needs a value");
      value = args[++i];
    }
    if (std::string why = apply(*setting, name, value, &o); !why.empty()) return error(why);
  }
  const StoreSecurity& sec = o.coordinator_security;
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
