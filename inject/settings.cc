#include "inject/settings.h"

#include <strings.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string_view>
#include <variant>

#include "common/env_names.h"
#include "common/log.h"
#include "common/parse_number.h"

namespace xpu_timer::inject {
namespace {

// How a variable's text becomes its value; ranges are inclusive.
struct Switch {  // 1/true/yes/on or 0/false/no/off, any case
  bool InjectSettings::*field;
};
struct Integer {
  int64_t InjectSettings::*field;
  int64_t min, max;
  const char* zero_means;  // what a default of 0 stands for, in the docs; nullptr: "0"
};
struct Real {
  double InjectSettings::*field;
  double min, max;
};
struct Text {
  const char* InjectSettings::*field;
  bool (*valid)(std::string_view);  // nullptr: any text
  const char* empty_means;          // what "" stands for, in the docs
  bool empty_is_value = false;      // set but empty is a value, not the default
};

// One row per variable: the reader, its messages and the docs' table come
// from here; defaults are InjectSettings' member initialisers.
struct Setting {
  const char* env;
  const char* expects;  // "must be <expects>"; nullptr for switches and free text
  const char* meaning;  // one line of the docs (markdown)
  std::variant<Switch, Integer, Real, Text> value;
};

// Characters of a "module:name": the value is pasted into a Python string
// literal, so nothing that could end it.
bool module_colon_name(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

constexpr int64_t kMaxPid = INT32_MAX;  // pid_t
static_assert(sizeof(recorder::Record) == 136, "the recorder's meaning below names 136 bytes");

using S = InjectSettings;
const Setting kSettings[] = {
    {proto::kEnvDisable, nullptr, "`1`: every hook passes straight through", Switch{&S::disable}},
    {proto::kEnvDebugMode, nullptr, "`1`: debug log lines (the supervisor reads it too)",
     Switch{&S::debug}},
    {proto::kEnvSocket, nullptr,
     "set by the supervisor for the job: its socket; without it the hooks pass through",
     Text{&S::socket, nullptr, "none"}},
    {proto::kEnvRunDir, nullptr,
     "set by the supervisor: the folder of the rank's status page and flight recorder",
     Text{&S::run_dir, nullptr, "none"}},
    {proto::kEnvSupervisorPid, "a process id",
     "set by the supervisor: the rank names it its allowed tracer (Yama `ptrace_scope=1`)",
     Integer{&S::supervisor_pid, 2, kMaxPid, "none"}},
    {"XPU_TIMER_SAMPLE_PER_SEC", "a number >= 0",
     "timings per (operation, shape) per second, the other calls only counted (collectives "
     "keep their completion marker); `0` times every call",
     Real{&S::sample_per_sec, 0, 1e9}},
    {"XPU_TIMER_RECORDER_SIZE", "a whole number 0-1048576",
     "flight-recorder records per rank, rounded up to a power of two (at least 16; 136 bytes "
     "each); `0`: no recorder",
     Integer{&S::recorder_size, 0, recorder::kMaxCapacity, nullptr}},
    {"XPU_TIMER_CRASH_WAIT_MS", "a whole number of milliseconds 0-60000",
     "how long a crashing rank waits at most for the supervisor to read its Python stacks; `0`: "
     "no wait, no Python stacks",
     Integer{&S::crash_wait_ms, 0, 60000, nullptr}},
    {proto::kEnvCrashDir, nullptr,
     "where a rank writes its crash report when no supervisor listens",
     Text{&S::crash_dir, nullptr, "the working directory"}},
    {"XPU_TIMER_POLL_INTERVAL_MS", "a number of milliseconds 0.05-1000",
     "the background thread's pass interval while work is pending (a diagnostic of its cost; see "
     "bench/gpu/whole_job_plan.sh)",
     Real{&S::poll_interval_ms, 0.05, 1000}},
    {"XPU_TIMER_CALL_SITES", nullptr,
     "`0`: collectives do not record the Python line that issued them (architecture.md \"Call "
     "sites\")",
     Switch{&S::call_sites}},
    {"XPU_TIMER_CALL_SITE_SKIP", "comma-separated path fragments",
     "path fragments of library code passed over to find a collective's call site; set but "
     "empty: the innermost frame",
     Text{&S::call_site_skip, nullptr, "", /*empty_is_value=*/true}},
    {"XPU_TIMER_NVTX_DOMAINS", "comma-separated domain names",
     "NVTX domains whose ranges are timed besides the default domain's; `*`: all (metrics.md "
     "\"NVTX ranges and steps\")",
     Text{&S::nvtx_domains, nullptr, "none"}},
    {"XPU_TIMER_STEP_RANGE", "an NVTX range name",
     "the NVTX range that is a training step; none: a step is the time between two optimizer "
     "steps",
     Text{&S::step_range, nullptr, "none"}},
    {"XPU_TIMER_PYTHON_PROBES", nullptr,
     "`0` turns off the Python probes (garbage collections, DataLoader waits, traced functions: "
     "metrics.md)",
     Switch{&S::python_probes}},
    {"XPU_TIMER_DATALOADER_ITER", "module:Class",
     "the iterator whose `__next__` is timed (the DataLoader's waits)",
     Text{&S::dataloader_iter, module_colon_name, "none"}},
    {"XPU_TIMER_OPTIMIZER_HOOK", "module:function",
     "the function that registers the optimizer step hook the steps are timed with",
     Text{&S::optimizer_hook, module_colon_name, "none"}},
    {"XPU_TIMER_PYTHON_MONITORING_TOOL", "a whole number 0-5",
     "the `sys.monitoring` tool id the traced functions (the DataLoader's included) take on "
     "Python 3.12+",
     Integer{&S::python_monitoring_tool, 0, 5, nullptr}},
    {"XPU_TIMER_NAME_THREADS", nullptr,
     "`0`: the Python probes leave OS thread names alone (before CPython 3.14 they give each "
     "`threading.Thread` that did not name itself its Python name, so that stack files tell "
     "Python threads apart: \"Stacks and crashes\"); for a tool that relies on a thread's `comm` "
     "keeping the process's name",
     Switch{&S::name_threads}},
    {"XPU_TIMER_HOST_TRACING_FUNC", "comma-separated functions",
     "Python functions to trace besides the built-in ones: `module@object@function`, "
     "`module@function` or a function of the entry script (see \"Python function tracing\")",
     Text{&S::host_tracing_func, nullptr, "none"}},
};
static_assert(std::size(kSettings) <= SettingProblems::kMaxLines);

// A switch's word, or -1.
int switch_value(const char* v) {
  for (const char* t : {"1", "true", "yes", "on"}) {
    if (strcasecmp(v, t) == 0) return 1;
  }
  for (const char* f : {"0", "false", "no", "off"}) {
    if (strcasecmp(v, f) == 0) return 0;
  }
  return -1;
}

// The default of `s`, as the docs and the messages show it.
void default_text(const Setting& s, char* out, size_t size) {
  static constexpr InjectSettings kDefaults{};
  if (const auto* v = std::get_if<Switch>(&s.value)) {
    std::snprintf(out, size, "%d", kDefaults.*v->field ? 1 : 0);
  } else if (const auto* v = std::get_if<Integer>(&s.value)) {
    const int64_t d = kDefaults.*v->field;
    if (d == 0 && v->zero_means != nullptr) {
      std::snprintf(out, size, "%s", v->zero_means);
    } else {
      std::snprintf(out, size, "%lld", static_cast<long long>(d));
    }
  } else if (const auto* v = std::get_if<Real>(&s.value)) {
    std::snprintf(out, size, "%g", kDefaults.*v->field);
  } else if (const auto* v = std::get_if<Text>(&s.value)) {
    const char* d = kDefaults.*v->field;
    std::snprintf(out, size, "%s", *d == '\0' ? v->empty_means : d);
  }
}

// What a value of `s` must be, in words.
const char* expects_text(const Setting& s) {
  if (std::holds_alternative<Switch>(s.value)) return "1 or 0";
  return s.expects != nullptr ? s.expects : "text";
}

// Copies `v` into the store; nullptr when it does not fit.
const char* keep_text(std::string_view v, TextStore* store) {
  if (store->size - store->used < v.size() + 1) return nullptr;
  char* kept = store->data + store->used;
  std::memcpy(kept, v.data(), v.size());
  kept[v.size()] = '\0';
  store->used += v.size() + 1;
  return kept;
}

enum class Refusal { kNone, kBadValue, kTooLong };

// Sets `s` from `v`, or says why not.
Refusal apply(const Setting& s, const char* v, InjectSettings* out, TextStore* store) {
  if (const auto* f = std::get_if<Switch>(&s.value)) {
    const int b = switch_value(v);
    if (b < 0) return Refusal::kBadValue;
    out->*f->field = b == 1;
  } else if (const auto* f = std::get_if<Integer>(&s.value)) {
    const std::optional<int64_t> n = parse_int(v, f->min, f->max);
    if (!n) return Refusal::kBadValue;
    out->*f->field = *n;
  } else if (const auto* f = std::get_if<Real>(&s.value)) {
    const std::optional<double> x = parse_real(v, f->min, f->max);
    if (!x) return Refusal::kBadValue;
    out->*f->field = *x;
  } else if (const auto* f = std::get_if<Text>(&s.value)) {
    if (f->valid != nullptr && !f->valid(v)) return Refusal::kBadValue;
    const char* kept = keep_text(v, store);
    if (kept == nullptr) return Refusal::kTooLong;
    out->*f->field = kept;
  }
  return Refusal::kNone;
}

// One line naming the variable, what it takes, the value (printable, cut)
// and the default used instead.
void note_problem(const Setting& s, const char* v, Refusal why, size_t store_bytes,
                  SettingProblems* problems) {
  if (problems->count >= SettingProblems::kMaxLines) return;
  char shown[72];
  size_t n = 0;
  for (; v[n] != '\0' && n + 1 < sizeof(shown); ++n) {
    const unsigned char c = static_cast<unsigned char>(v[n]);
    shown[n] = c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  shown[n] = '\0';
  const char* cut = v[n] != '\0' ? "..." : "";
  char fallback[96];
  default_text(s, fallback, sizeof(fallback));
  char* line = problems->lines[problems->count++];
  if (why == Refusal::kTooLong) {
    std::snprintf(line, SettingProblems::kLineBytes,
                  "%s is too long (%zu bytes; the text settings share %zu): the default (%s) is "
                  "used",
                  s.env, std::strlen(v), store_bytes, fallback);
  } else {
    std::snprintf(line, SettingProblems::kLineBytes,
                  "%s must be %s, got '%s%s': the default (%s) is used", s.env, expects_text(s),
                  shown, cut, fallback);
  }
}

// The process's. Constant-initialised, never by a constructor that could
// run after the reader's: the constexpr copies below fail to compile if a
// member without a constant initialiser is ever added.
char g_text[kTextStoreBytes];
InjectSettings g_settings;
SettingProblems g_problems;
[[maybe_unused]] constexpr InjectSettings kConstantSettings{};
[[maybe_unused]] constexpr SettingProblems kConstantProblems{};

// Before the library's other constructors (the ptrace permit reads the
// supervisor's pid) and before main: no thread of the program runs yet.
__attribute__((constructor(101))) void read_process_settings() {
  TextStore store{g_text, sizeof(g_text)};
  read_settings([](const char* name) -> const char* { return std::getenv(name); }, &g_settings,
                &store, &g_problems);
}

}  // namespace

void read_settings(EnvGetter env, InjectSettings* out, TextStore* store,
                   SettingProblems* problems) {
  for (const Setting& s : kSettings) {
    const char* v = env(s.env);
    if (v == nullptr) continue;
    const auto* text = std::get_if<Text>(&s.value);
    if (*v == '\0' && (text == nullptr || !text->empty_is_value)) continue;
    if (const Refusal why = apply(s, v, out, store); why != Refusal::kNone) {
      note_problem(s, v, why, store->size, problems);
    }
  }
}

const InjectSettings& settings() { return g_settings; }

void report_setting_problems() {
  for (int i = 0; i < g_problems.count; ++i) XPU_TIMER_LOG_WARN("%s", g_problems.lines[i]);
}

std::string settings_markdown() {
  const auto cell = [](std::string_view text) {
    std::string out;
    for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string s = "| variable | default | value | meaning |\n| --- | --- | --- | --- |\n";
  for (const Setting& row : kSettings) {
    char fallback[96];
    default_text(row, fallback, sizeof(fallback));
    s += "| `" + std::string(row.env) + "` | " + cell(fallback) + " | " + cell(expects_text(row)) +
         " | " + cell(row.meaning) + " |\n";
  }
  return s;
}

}  // namespace xpu_timer::inject
