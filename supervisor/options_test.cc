#include "supervisor/options.h"

#include <gtest/gtest.h>

#include <map>

namespace xpu_timer::supervisor {
namespace {

ParseResult parse(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  return parse_options(args, [env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Options, Defaults) {
  const ParseResult r = parse({"--", "python", "train.py"});
  ASSERT_EQ(r.status, ParseResult::Status::kOk);
  EXPECT_EQ(r.options.port, 18888);
  EXPECT_FALSE(r.options.port_given);  // busy: a free port instead, said loudly
  EXPECT_EQ(r.options.host, "127.0.0.1");
  EXPECT_DOUBLE_EQ(r.options.hang_timeout_s, 300.0);
  EXPECT_EQ(r.options.dump_dir, "./xpu_timer_dump");
  EXPECT_EQ(r.options.on_hang, OnHang::kKeep);
  EXPECT_EQ(r.options.poll_ms, 500);
  EXPECT_DOUBLE_EQ(r.options.kill_grace_s, 10.0);
  EXPECT_EQ(r.options.command, (std::vector<std::string>{"python", "train.py"}));
}

TEST(Options, EnvironmentThenCommandLine) {
  const ParseResult r = parse({"--hang-timeout=2.5", "--", "x"}, {{"XPU_TIMER_BASEPORT", "19000"},
                                                                  {"XPU_TIMER_HANG_TIMEOUT", "60"},
                                                                  {"XPU_TIMER_HANG_KILL", "1"}});
  ASSERT_EQ(r.status, ParseResult::Status::kOk);
  EXPECT_EQ(r.options.port, 19000);
  EXPECT_TRUE(r.options.port_given);
  EXPECT_DOUBLE_EQ(r.options.hang_timeout_s, 2.5);
  EXPECT_EQ(r.options.on_hang, OnHang::kKill);
}

TEST(Options, AllOptionsBothForms) {
  const ParseResult r =
      parse({"--port", "0", "--host=0.0.0.0", "--dump-dir", "/tmp/d", "--on-hang", "kill",
             "--poll-ms=20", "--kill-grace", "0.5", "torchrun", "--nproc", "2", "--", "t.py"});
  ASSERT_EQ(r.status, ParseResult::Status::kOk) << r.error;
  EXPECT_EQ(r.options.port, 0);
  EXPECT_TRUE(r.options.port_given);
  EXPECT_EQ(r.options.host, "0.0.0.0");
  EXPECT_EQ(r.options.dump_dir, "/tmp/d");
  EXPECT_EQ(r.options.on_hang, OnHang::kKill);
  EXPECT_EQ(r.options.poll_ms, 20);
  EXPECT_DOUBLE_EQ(r.options.kill_grace_s, 0.5);
  // The command keeps its own options and "--".
  EXPECT_EQ(r.options.command,
            (std::vector<std::string>{"torchrun", "--nproc", "2", "--", "t.py"}));
}

TEST(Options, BadInputIsAnErrorNamingTheProblem) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string error;
  };
  const Case cases[] = {
      {{"--port", "70000", "--", "x"}, {}, "--port must be a port number 0-65535, got '70000'"},
      {{"--port", "12ab", "--", "x"}, {}, "--port must be a port number 0-65535, got '12ab'"},
      {{"--hang-timeout", "0", "--", "x"},
       {},
       "--hang-timeout must be a positive number of seconds, got '0'"},
      {{"--hang-timeout", "nan", "--", "x"},
       {},
       "--hang-timeout must be a positive number of seconds, got 'nan'"},
      {{"--on-hang", "maybe", "--", "x"}, {}, "--on-hang must be 'keep' or 'kill', got 'maybe'"},
      {{"--poll-ms", "0", "--", "x"},
       {},
       "--poll-ms must be a whole number of milliseconds >= 1, got '0'"},
      {{"--kill-grace", "-1", "--", "x"},
       {},
       "--kill-grace must be a number of seconds >= 0, got '-1'"},
      {{"--frobnicate", "--", "x"}, {}, "unknown option '--frobnicate' (see --help)"},
      {{"--port"}, {}, "option --port needs a value"},
      {{"--port", "1"}, {}, "no command to run (put it after --)"},
      {{"--"}, {}, "no command to run (put it after --)"},
      {{"--", "x"},
       {{"XPU_TIMER_BASEPORT", "abc"}},
       "XPU_TIMER_BASEPORT must be a port number 0-65535, got 'abc'"},
  };
  for (const Case& c : cases) {
    const ParseResult r = parse(c.args, c.env);
    EXPECT_EQ(r.status, ParseResult::Status::kError) << c.error;
    EXPECT_EQ(r.error, c.error);
  }
}

TEST(Options, StallFactorFromTheEnvironmentOrTheCommandLineZeroTurnsItOff) {
  EXPECT_DOUBLE_EQ(parse({"--", "x"}).options.stall_factor, 2.0);
  EXPECT_DOUBLE_EQ(parse({"--", "x"}, {{"XPU_TIMER_STALL_FACTOR", "3"}}).options.stall_factor, 3.0);
  EXPECT_DOUBLE_EQ(parse({"--stall-factor=0", "--", "x"}, {{"XPU_TIMER_STALL_FACTOR", "3"}})
                       .options.stall_factor,
                   0.0);
  EXPECT_DOUBLE_EQ(parse({"--stall-factor", "1.5", "--", "x"}).options.stall_factor, 1.5);
  ParseResult r = parse({"--stall-factor", "-1", "--", "x"});
  EXPECT_EQ(r.status, ParseResult::Status::kError);
  EXPECT_EQ(r.error, "--stall-factor must be a number >= 0 (0: off), got '-1'");
  r = parse({"--", "x"}, {{"XPU_TIMER_STALL_FACTOR", "often"}});
  EXPECT_EQ(r.error, "XPU_TIMER_STALL_FACTOR must be a number >= 0 (0: off), got 'often'");
  // The first log line says when a stall is declared, or that none is.
  Options o = parse({"--hang-timeout", "300", "--", "x"}).options;
  EXPECT_NE(options_summary(o).find("hang timeout 300 s, stall after 600 s, on hang keep"),
            std::string::npos)
      << options_summary(o);
  o.stall_factor = 0;
  EXPECT_NE(options_summary(o).find("no stall detection"), std::string::npos);
}

// The settings of /metrics and of the exit-hook plugins that only a
// variable sets: the component's own default, a value taken, a bad one refused.
TEST(Options, MetricsWindowExpiryAndPluginTimeoutFromTheEnvironment) {
  const Options defaults = parse({"--", "x"}).options;
  EXPECT_DOUBLE_EQ(defaults.metrics_window_s, MetricsConfig{}.window_s);
  EXPECT_DOUBLE_EQ(defaults.metrics_expiry_s, MetricsConfig{}.expiry_s);
  EXPECT_DOUBLE_EQ(defaults.plugin_timeout_s, PluginSettings{}.timeout_s);
  const ParseResult r = parse({"--", "x"}, {{"XPU_TIMER_METRICS_WINDOW_S", "5"},
                                            {"XPU_TIMER_METRICS_EXPIRY_S", "120"},
                                            {"XPU_TIMER_PLUGIN_TIMEOUT", "2.5"}});
  ASSERT_EQ(r.status, ParseResult::Status::kOk) << r.error;
  EXPECT_DOUBLE_EQ(r.options.metrics_window_s, 5);
  EXPECT_DOUBLE_EQ(r.options.metrics_expiry_s, 120);
  EXPECT_DOUBLE_EQ(r.options.plugin_timeout_s, 2.5);
  for (const char* name :
       {"XPU_TIMER_METRICS_WINDOW_S", "XPU_TIMER_METRICS_EXPIRY_S", "XPU_TIMER_PLUGIN_TIMEOUT"}) {
    for (const char* bad : {"0", "-3", "soon"}) {
      EXPECT_EQ(parse({"--", "x"}, {{name, bad}}).error,
                std::string(name) + " must be a positive number of seconds, got '" + bad + "'");
    }
  }
}

// The plugins' and the injected library's variables are settings like the
// others: read once here, their defaults written once (PluginSettings'
// interpreter), an empty value the default.
TEST(Options, PluginsAndTheInjectedLibraryFromTheEnvironment) {
  const Options defaults = parse({"--", "x"}).options;
  EXPECT_EQ(defaults.exit_hook_plugins, "");
  EXPECT_EQ(defaults.plugin_python, PluginSettings{}.python);
  EXPECT_EQ(defaults.plugin_host, "");
  EXPECT_EQ(defaults.inject_lib, "");
  const ParseResult r = parse({"--", "x"}, {{"XPU_TIMER_EXIT_HOOK_PLUGIN", "/a.py,/b.py"},
                                            {"XPU_TIMER_PLUGIN_PYTHON", "/opt/py/bin/python3.12"},
                                            {"XPU_TIMER_PLUGIN_HOST", "/srv/plugin_host.py"},
                                            {"XPU_TIMER_INJECT_LIB", "/srv/lib/inject.so"}});
  ASSERT_EQ(r.status, ParseResult::Status::kOk) << r.error;
  EXPECT_EQ(r.options.exit_hook_plugins, "/a.py,/b.py");
  EXPECT_EQ(r.options.plugin_python, "/opt/py/bin/python3.12");
  EXPECT_EQ(r.options.plugin_host, "/srv/plugin_host.py");
  EXPECT_EQ(r.options.inject_lib, "/srv/lib/inject.so");
  const ParseResult empty = parse({"--", "x"}, {{"XPU_TIMER_PLUGIN_PYTHON", ""}});
  ASSERT_EQ(empty.status, ParseResult::Status::kOk) << empty.error;
  EXPECT_EQ(empty.options.plugin_python, PluginSettings{}.python);
  const PluginSettings p = plugin_settings_from(r.options.exit_hook_plugins,
                                                r.options.plugin_python, r.options.plugin_host);
  EXPECT_EQ(p.plugins, (std::vector<std::string>{"/a.py", "/b.py"}));
  EXPECT_EQ(p.python, "/opt/py/bin/python3.12");
  EXPECT_EQ(p.host_script, "/srv/plugin_host.py");
  const PluginSettings none = plugin_settings_from("", "", "");
  EXPECT_TRUE(none.plugins.empty());
  EXPECT_EQ(none.python, PluginSettings{}.python);
  EXPECT_NE(none.host_script.find("/share/xpu_timer/plugin_host.py"), std::string::npos);
}

TEST(Options, Help) { EXPECT_EQ(parse({"--help"}).status, ParseResult::Status::kHelp); }

TEST(Options, HelpListsEveryFlagWithItsDefaultAndEnvironmentVariable) {
  const std::string help = help_text();
  EXPECT_EQ(help.rfind(usage_line() + "\n", 0), 0u) << help;
  const char* const expected[] = {
      "  --port P                HTTP port (/metrics, /hang, /ranks, dumps); 0 picks a free one\n"
      "                          default 18888; environment XPU_TIMER_BASEPORT\n",
      "  --host H                IP address the HTTP server listens on; 0.0.0.0 for all\n"
      "                          default 127.0.0.1; no environment variable\n",
      "  --hang-timeout S        seconds an operation may be in flight before its rank is stuck\n"
      "                          default 300; environment XPU_TIMER_HANG_TIMEOUT\n",
      "                          default 2; environment XPU_TIMER_STALL_FACTOR\n",
      "  --dump-dir D            folder for hang.json, stack dumps and crash reports\n"
      "                          default ./xpu_timer_dump; no environment variable\n",
      "  --on-hang keep|kill     on a hang, keep the job or end it once its stacks are in\n"
      "                          default keep; environment XPU_TIMER_HANG_KILL=1 means kill\n",
      "  --poll-ms MS            how often the ranks' status pages are read\n"
      "                          default 500; no environment variable\n",
      "  --kill-grace S          seconds from SIGTERM to SIGKILL when the job is ended\n"
      "                          default 10; no environment variable\n",
      "  -h, --help              this help\n",
      "  XPU_TIMER_EXIT_HOOK_PLUGIN: comma-separated Python plugin files run on a crash; default "
      "none\n",
      "  XPU_TIMER_PLUGIN_PYTHON: interpreter of the exit-hook plugins; default python3\n",
      "  XPU_TIMER_METRICS_WINDOW_S: seconds the rate gauges of /metrics (FLOP/s, bandwidths, "
      "calls/s) look back; default 30\n",
  };
  for (const char* line : expected) EXPECT_NE(help.find(line), std::string::npos) << line << help;
  // The defaults the help names are the parser's.
  const ParseResult r = parse({"--", "x"});
  EXPECT_EQ(r.options.port, 18888);
  EXPECT_EQ(r.options.dump_dir, "./xpu_timer_dump");
}

// The coordinator and the job's name in it: the option, its variable, and
// the job id from the launcher when none is given.
TEST(Options, CoordinatorAndJobId) {
  ParseResult r = parse({"--", "torchrun", "train.py"});
  ASSERT_EQ(r.status, ParseResult::Status::kOk);
  EXPECT_EQ(r.options.coordinator, "");
  EXPECT_EQ(r.options.job_id, "default");
  r = parse(
      {"--coordinator", "etcd://10.0.0.5:2379", "--", "torchrun", "--rdzv-id", "llm7", "t.py"});
  ASSERT_EQ(r.status, ParseResult::Status::kOk) << r.error;
  EXPECT_EQ(r.options.coordinator, "etcd://10.0.0.5:2379");
  EXPECT_EQ(r.options.job_id, "llm7");
  r = parse({"--", "torchrun", "--rdzv_id=llm8", "t.py"});
  EXPECT_EQ(r.options.job_id, "llm8");
  r = parse({"--", "torchrun", "t.py"}, {{"TORCHELASTIC_RUN_ID", "run9"}});
  EXPECT_EQ(r.options.job_id, "run9");
  r = parse({"--job-id", "mine", "--", "torchrun", "--rdzv-id", "llm7", "t.py"},
            {{"XPU_TIMER_JOB_ID", "env"}, {"XPU_TIMER_COORDINATOR", "etcd://[::1]:2379"}});
  EXPECT_EQ(r.options.job_id, "mine");
  EXPECT_EQ(r.options.coordinator, "etcd://[::1]:2379");
  r = parse({"--coordinator", "none", "--", "x"}, {{"XPU_TIMER_COORDINATOR", "etcd://h:1"}});
  EXPECT_EQ(r.options.coordinator, "");
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--coordinator", "http://h:2379", "--", "x"},
        std::vector<std::string>{"--coordinator", "etcd://h", "--", "x"},
        std::vector<std::string>{"--job-id", "a/b", "--", "x"},
        std::vector<std::string>{"--job-id", "", "--", "x"}}) {
    r = parse(bad);
    EXPECT_EQ(r.status, ParseResult::Status::kError) << bad[1];
    EXPECT_FALSE(r.error.empty());
  }
}

// torchrun's default run and rendezvous id "none" names no job: the id (and
// job_name, which is the id when one is found) must not be shared by every
// job launched without one.
TEST(Options, TorchrunsNoneIsNoJobId) {
  ParseResult r = parse({"--", "torchrun", "t.py"}, {{"TORCHELASTIC_RUN_ID", "none"}});
  EXPECT_EQ(r.options.job_id, "default");
  EXPECT_FALSE(r.options.job_id_found);
  r = parse({"--", "torchrun", "--rdzv-id", "none", "t.py"}, {{"PET_RDZV_ID", "pet5"}});
  EXPECT_EQ(r.options.job_id, "default");
  r = parse({"--", "torchrun", "t.py"}, {{"TORCHELASTIC_RUN_ID", "none"}, {"PET_RDZV_ID", "pet5"}});
  EXPECT_EQ(r.options.job_id, "pet5");
  EXPECT_TRUE(r.options.job_id_found);
  r = parse({"--", "torchrun", "--rdzv-id", "llm7", "t.py"}, {{"TORCHELASTIC_RUN_ID", "none"}});
  EXPECT_EQ(r.options.job_id, "llm7");
  EXPECT_TRUE(r.options.job_id_found);
}

TEST(Options, MetricsHistogramsPerNodeOrRank) {
  EXPECT_FALSE(parse({"--", "x"}).options.metrics_per_rank_histograms);
  EXPECT_TRUE(
      parse({"--metrics-histograms", "rank", "--", "x"}).options.metrics_per_rank_histograms);
  EXPECT_TRUE(parse({"--", "x"}, {{"XPU_TIMER_METRICS_HISTOGRAMS", "rank"}})
                  .options.metrics_per_rank_histograms);
  EXPECT_FALSE(
      parse({"--metrics-histograms=node", "--", "x"}, {{"XPU_TIMER_METRICS_HISTOGRAMS", "rank"}})
          .options.metrics_per_rank_histograms);
  ParseResult r = parse({"--metrics-histograms", "ranks", "--", "x"});
  EXPECT_EQ(r.status, ParseResult::Status::kError);
  EXPECT_EQ(r.error, "--metrics-histograms must be 'node' or 'rank', got 'ranks'");
  r = parse({"--", "x"}, {{"XPU_TIMER_METRICS_HISTOGRAMS", "1"}});
  EXPECT_EQ(r.error, "XPU_TIMER_METRICS_HISTOGRAMS must be 'node' or 'rank', got '1'");
}

// etcd's auth and TLS: flags or variables for the files and the user, the
// password only from a variable or a file; what cannot work is refused.
TEST(Options, CoordinatorCredentials) {
  ParseResult r = parse({"--coordinator", "https://etcd:2379", "--etcd-ca-file", "/etc/hostname",
                         "--etcd-cert-file", "/etc/hostname", "--etcd-key-file", "/etc/hostname",
                         "--etcd-user", "xpu", "--", "x"},
                        {{"XPU_TIMER_ETCD_PASSWORD", "pw"}});
  ASSERT_EQ(r.status, ParseResult::Status::kOk) << r.error;
  EXPECT_EQ(r.options.coordinator_security.ca_file, "/etc/hostname");
  EXPECT_EQ(r.options.coordinator_security.cert_file, "/etc/hostname");
  EXPECT_EQ(r.options.coordinator_security.user, "xpu");
  EXPECT_EQ(r.options.coordinator_security.password, "pw");
  r = parse({"--coordinator", "etcd://etcd:2379", "--", "x"},
            {{"XPU_TIMER_ETCD_USER", "xpu"}, {"XPU_TIMER_ETCD_PASSWORD_FILE", "/etc/hostname"}});
  ASSERT_EQ(r.status, ParseResult::Status::kOk) << r.error;
  EXPECT_EQ(r.options.coordinator_security.password_file, "/etc/hostname");
  r = parse({"--coordinator", "etcd://etcd:2379", "--etcd-ca-file", "/etc/hostname", "--", "x"});
  EXPECT_EQ(r.status, ParseResult::Status::kError);
  EXPECT_EQ(r.error,
            "etcd CA, certificate or key files are given but the coordinator URL is not TLS (write "
            "https://HOST:PORT)");
  r = parse({"--coordinator", "etcd://etcd:2379", "--etcd-user", "xpu", "--", "x"});
  EXPECT_EQ(r.error, "the etcd user 'xpu' is given without a password (give a password file)");
  EXPECT_EQ(parse({"--etcd-password", "pw", "--", "x"}).status, ParseResult::Status::kError);
}

}  // namespace
}  // namespace xpu_timer::supervisor
