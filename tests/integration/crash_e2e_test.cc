// End to end, crash forensics (issue 4): a rank of a sim job dies of a
// segfault, an abort, an uncaught Python exception, a SIGTERM from outside or
// a SIGKILL; the supervisor reports it (GET /ranks "crash", a crash-rank file,
// one log line), runs the exit-hook plugins with xpu-timer's arguments, and
// ends exactly as the bare job ends. A plugin that raises or hangs changes
// nothing but log lines.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/integration/supervisor_fixture.h"
#include "tests/simgpu/sim_segments.h"

namespace xpu_timer::testing {
namespace crash_e2e {

using nlohmann::json;
using std::chrono::seconds;

// The interpreter itself, not a wrapper (a pyenv shim starts slowly).
std::string real_python3() {
  static const std::string path = [] {
    Child c({python3(), "-c", "import sys; print(sys.executable)"});
    std::string out = c.wait_exit_code(seconds(30)) == 0 ? c.output() : "";
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out.empty() ? python3() : out;
  }();
  return path;
}

std::string jsonl_plugin() { return source_dir() + "/plugins/examples/jsonl_plugin.py"; }

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
  }
  return out;
}

json crash_file(const std::string& dump_dir, int rank) {
  DIR* d = ::opendir(dump_dir.c_str());
  json found;
  const std::string prefix = "crash-rank" + std::to_string(rank) + "-";
  while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == ".json") {
      found = json::parse(read_file(dump_dir + "/" + name), nullptr, false);
    }
  }
  if (d != nullptr) ::closedir(d);
  return found;
}

bool has_function(const json& frames, const std::string& name) {
  for (const json& f : frames) {
    const std::string fn = f.contains("function") ? f["function"].get<std::string>()
                                                  : f["function_name"].get<std::string>();
    if (fn == name) return true;
  }
  return false;
}

// The cpp-hook line of the plugin output for `rank`, or null.
json plugin_line(const std::vector<json>& lines, const std::string& hook, int rank) {
  for (const json& l : lines) {
    if (l.value("hook", "") != hook) continue;
    const json& who = hook == "cpp" ? l["stack_infos"] : l["infos"];
    if (who.value("rank", -1) == rank) return l;
  }
  return nullptr;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A rank of a bare job: the launcher's child whose environment has RANK=rank.
pid_t pid_of_rank(pid_t launcher, int rank) {
  pid_t found = -1;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    int ppid = 0;
    char state = 0;
    const auto rp = line.rfind(')');
    if (rp == std::string::npos || std::sscanf(line.c_str() + rp + 1, " %c %d", &state, &ppid) != 2 ||
        ppid != launcher) {
      continue;
    }
    const std::string env = read_file(std::string("/proc/") + e->d_name + "/environ");
    if (env.find(std::string("RANK=") + std::to_string(rank) + '\0') == 0 ||
        env.find(std::string("\0RANK=", 6) + std::to_string(rank) + '\0') != std::string::npos) {
      found = pid;
    }
  }
  if (d != nullptr) ::closedir(d);
  return found;
}

ExitStatus run_bare(const std::string& name, const std::vector<std::string>& job) {
  const std::string dir = make_temp_dir(name);
  return run_to_end(job, sim_env(), dir + "/console.log", seconds(60));
}

// Bare job whose rank `rank` gets `sig` from outside once the job printed
// `ready_line`: the point where the supervised run of the test sent it.
ExitStatus run_bare_signalled(const std::string& name, const std::vector<std::string>& job,
                              int rank, int sig, const std::string& ready_line) {
  const std::string dir = make_temp_dir(name);
  Child c(job, sim_env(), ChildOptions{dir + "/console.log"});
  pid_t target = -1;
  EXPECT_TRUE(wait_until([&] { return (target = pid_of_rank(c.pid(), rank)) > 0; }, seconds(20)));
  EXPECT_TRUE(c.wait_for_output(ready_line, seconds(30))) << c.output();
  if (target > 0) ::kill(target, sig);
  auto s = c.wait_for(seconds(60));
  EXPECT_TRUE(s.has_value()) << read_file(dir + "/console.log");
  return s.value_or(ExitStatus{});
}

struct Supervised {
  std::unique_ptr<SupervisedJob> job;
  ExitStatus status;
  std::string jsonl;
};

Supervised start(const std::string& name, const std::vector<std::string>& job,
                 std::vector<std::string> plugins, std::vector<std::string> env = {}) {
  Supervised s;
  const std::string dir = make_temp_dir(name + "-plugins");
  s.jsonl = dir + "/crashes.jsonl";
  std::string list;
  for (const std::string& p : plugins) list += (list.empty() ? "" : ",") + p;
  env.push_back("XPU_TIMER_EXIT_HOOK_PLUGIN=" + list);
  env.push_back("XPU_TIMER_PLUGIN_JSONL=" + s.jsonl);
  env.push_back("XPU_TIMER_PLUGIN_PYTHON=" + real_python3());
  s.job = std::make_unique<SupervisedJob>(name, std::vector<std::string>{"--hang-timeout", "60"},
                                          job, env);
  return s;
}

void finish(Supervised* s) {
  auto st = s->job->child().wait_for(seconds(90));
  ASSERT_TRUE(st.has_value()) << "supervisor did not end:\n" << s->job->log();
  s->status = *st;
}

TEST(CrashE2E, SegvIsReportedWithItsFrameAndBadPluginsOnlyCostLogLines) {
  const auto job = sim_job(2, false, {"--steps", "50", "--crash-rank", "1", "--crash-step", "3",
                                      "--crash-kind", "segv"});
  const std::string pdir = make_temp_dir("bad-plugins");
  std::ofstream(pdir + "/raising.py")
      << "def xpu_timer_parse_cpp_exception(stack_infos):\n    raise ValueError('plugin bug')\n";
  std::ofstream(pdir + "/hanging.py")
      << "import time\ndef xpu_timer_parse_cpp_exception(stack_infos):\n    time.sleep(600)\n";
  Supervised s = start("crash-segv", job,
                       {pdir + "/raising.py", pdir + "/hanging.py", pdir + "/missing.py",
                        jsonl_plugin()},
                       {"XPU_TIMER_PLUGIN_TIMEOUT=2"});
  finish(&s);
  const ExitStatus bare = run_bare("bare-segv", job);
  EXPECT_EQ(describe(s.status), describe(bare));

  const std::string log = s.job->log();
  const json crash = crash_file(s.job->dump_dir(), 1);
  ASSERT_TRUE(crash.is_object()) << log;
  EXPECT_EQ(crash["kind"], "signal");
  EXPECT_EQ(crash["rank"], 1);
  EXPECT_EQ(crash["signal"], SIGSEGV);
  EXPECT_TRUE(has_function(crash["frames"], "sim_crash_segv"))
      << "sim_crash_segv not among the frames (is it compiled to a tail call of raise()?):\n"
      << crash.dump(2);
  EXPECT_NE(log.find("crash: rank 1 (pid "), std::string::npos) << log;
  // Rank 0 was torn down by the launcher: terminated, not a second crash.
  EXPECT_EQ(count_of(log, "crash: "), 1u) << log;
  EXPECT_TRUE(crash_file(s.job->dump_dir(), 0).is_null()) << log;
  EXPECT_EQ(count_of(log, "terminated: "), 1u) << log;
  EXPECT_NE(log.find("terminated: rank 0 ended by the launcher after rank 1's crash (SIGSEGV)"),
            std::string::npos)
      << log;
  EXPECT_EQ(crash["outcome"], "crashed");

  const auto lines = read_jsonl(s.jsonl);
  size_t cpp_lines = 0;
  for (const json& l : lines) cpp_lines += l.value("hook", "") == "cpp" ? 1 : 0;
  EXPECT_EQ(cpp_lines, 1u) << read_file(s.jsonl);
  const json cpp = plugin_line(lines, "cpp", 1);
  ASSERT_TRUE(cpp.is_object()) << read_file(s.jsonl) << log;
  const json& si = cpp["stack_infos"];
  for (const char* key : {"signal", "rank", "ip", "pod_name", "job_name", "time", "frame_infos"}) {
    EXPECT_TRUE(si.contains(key)) << key;
  }
  EXPECT_EQ(si["signal"], SIGSEGV);
  ASSERT_FALSE(si["frame_infos"].empty());
  for (const char* key : {"address", "offset", "function_name"}) {
    EXPECT_TRUE(si["frame_infos"][0].contains(key)) << key;
  }
  // A plugin's failure is a warning, with its traceback; a missing plugin is
  // said at start, before any crash, and again when it fails.
  const auto line_with = [&log](const std::string& needle) {
    const size_t at = log.find(needle);
    if (at == std::string::npos) return std::string();
    const size_t begin = log.rfind('\n', at);
    return log.substr(begin == std::string::npos ? 0 : begin + 1,
                      log.find('\n', at) - (begin == std::string::npos ? 0 : begin + 1));
  };
  const std::string raised = line_with("error: plugin raised ValueError: plugin bug");
  EXPECT_NE(raised.find(" WARN] plugin raising.py (rank 1 pid "), std::string::npos) << log;
  EXPECT_NE(line_with("raise ValueError('plugin bug')").find(" WARN] "), std::string::npos) << log;
  EXPECT_NE(log.find("plugin hanging.py"), std::string::npos) << log;
  EXPECT_NE(log.find("killed"), std::string::npos) << log;
  const std::string missing = pdir + "/missing.py";
  const size_t unreadable = log.find("exit-hook plugin " + missing + " is not readable");
  EXPECT_NE(unreadable, std::string::npos) << log;
  EXPECT_LT(unreadable, log.find("crash: rank 1")) << log;
  EXPECT_NE(line_with("error: cannot load plugin " + missing).find(" WARN] "), std::string::npos)
      << log;
}

TEST(CrashE2E, AbortIsReportedWithAbortInTheFrames) {
  const auto job = sim_job(2, false, {"--steps", "50", "--crash-rank", "0", "--crash-step", "2",
                                      "--crash-kind", "abort"});
  Supervised s = start("crash-abort", job, {jsonl_plugin()});
  finish(&s);
  EXPECT_EQ(describe(s.status), describe(run_bare("bare-abort", job)));
  const json crash = crash_file(s.job->dump_dir(), 0);
  ASSERT_TRUE(crash.is_object()) << s.job->log();
  EXPECT_EQ(crash["signal"], SIGABRT);
  EXPECT_TRUE(has_function(crash["frames"], "abort")) << crash.dump(2);
  EXPECT_TRUE(has_function(crash["frames"], "sim_crash_abort")) << crash.dump(2);
  const json cpp = plugin_line(read_jsonl(s.jsonl), "cpp", 0);
  ASSERT_TRUE(cpp.is_object()) << read_file(s.jsonl);
  EXPECT_EQ(cpp["stack_infos"]["signal"], SIGABRT);
}

TEST(CrashE2E, UncaughtPythonExceptionReachesThePythonHookWithRealTypes) {
  const auto job = sim_job(2, true, {"--steps", "50", "--crash-rank", "1", "--crash-step", "3",
                                     "--crash-kind", "exception"});
  // The pod identity a Kubernetes pod's downward API gives, as xpu-timer reads it.
  Supervised s = start("crash-exception", job, {jsonl_plugin()},
                       {"POD_NAME=trainer-pod-1", "POD_IP=10.9.8.7", "ENV_ARGO_WORKFLOW_NAME=wf-42"});
  finish(&s);
  EXPECT_EQ(describe(s.status), describe(run_bare("bare-exception", job)));
  const json crash = crash_file(s.job->dump_dir(), 1);
  ASSERT_TRUE(crash.is_object()) << s.job->log();
  EXPECT_EQ(crash["kind"], "python_exception");
  EXPECT_EQ(crash["exception"]["type"], "RuntimeError");
  EXPECT_EQ(crash["exception"]["message"], "simulated training failure at step 3");

  const json py = plugin_line(read_jsonl(s.jsonl), "python", 1);
  ASSERT_TRUE(py.is_object()) << read_file(s.jsonl) << s.job->log();
  for (const char* key : {"time", "rank", "ip", "pod_name", "job_name"}) {
    EXPECT_TRUE(py["infos"].contains(key)) << key;
  }
  EXPECT_EQ(py["infos"]["pod_name"], "trainer-pod-1");
  EXPECT_EQ(py["infos"]["ip"], "10.9.8.7");
  EXPECT_EQ(py["infos"]["job_name"], "wf-42");
  EXPECT_EQ(py["exc_type"], "RuntimeError");
  EXPECT_TRUE(py["exc_type_is_exception_class"].get<bool>());
  EXPECT_TRUE(py["exc_value_is_instance"].get<bool>());
  EXPECT_EQ(py["exc_value"], "simulated training failure at step 3");
  EXPECT_EQ(py["traceback_type"], "traceback");
  bool crash_frame = false;
  for (const json& f : py["traceback"]) {
    const std::string file = f["file"];
    if (f["func"] == "crash" && file.size() >= 14 && file.substr(file.size() - 14) == "sim_trainer.py") {
      crash_frame = true;
    }
  }
  EXPECT_TRUE(crash_frame) << py.dump(2);
}

TEST(CrashE2E, SigtermFromOutsideIsReportedWithItsSender) {
  // --verbose: the bare run below waits for rank 1's first step.
  const auto job = sim_job(2, false, {"--steps", "100000", "--step-ms", "20", "--verbose"});
  Supervised s = start("crash-sigterm", job, {jsonl_plugin()});
  ASSERT_TRUE(s.job->wait_registered(2, seconds(30))) << s.job->log();
  pid_t target = -1;
  for (const json& r : s.job->get_json("/ranks")) {
    if (r["rank"] == 1) target = r["pid"];
  }
  ASSERT_GT(target, 0);
  ::kill(target, SIGTERM);
  finish(&s);
  EXPECT_EQ(describe(s.status), describe(run_bare_signalled("bare-sigterm", job, 1, SIGTERM,
                                                            "rank 1 step 0 done")));
  const json crash = crash_file(s.job->dump_dir(), 1);
  ASSERT_TRUE(crash.is_object()) << s.job->log();
  EXPECT_EQ(crash["signal"], SIGTERM);
  EXPECT_EQ(crash["pid"], target);
  EXPECT_NE(crash["sender"].get<std::string>().find("pid " + std::to_string(getpid())),
            std::string::npos)
      << crash.dump(2);
  EXPECT_FALSE(crash["frames"].empty());
  EXPECT_TRUE(plugin_line(read_jsonl(s.jsonl), "cpp", 1).is_object()) << read_file(s.jsonl);
}

TEST(CrashE2E, SigkillIsADeathWithoutAReportWithItsLastOperation) {
  // Rank 0 stops calling collectives: rank 1 waits in an AllReduce, then is killed.
  const auto job = sim_job(2, false, {"--steps", "100000", "--step-ms", "10", "--hang-rank", "0",
                                      "--hang-step", "3"});
  Supervised s = start("crash-sigkill", job, {jsonl_plugin()});
  ASSERT_TRUE(s.job->wait_registered(2, seconds(30))) << s.job->log();
  pid_t target = -1;
  ASSERT_TRUE(wait_until(
      [&] {
        for (const json& r : s.job->get_json("/ranks")) {
          if (r["rank"] == 1 && r["inflight_count"].get<int>() > 0 &&
              r["oldest_inflight"]["name"] == "AllReduce" &&
              r["oldest_inflight"]["pending_s"].get<double>() > 1.0) {
            target = r["pid"];
            return true;
          }
        }
        return false;
      },
      seconds(30)))
      << s.job->log();
  ::kill(target, SIGKILL);
  // Seen on /ranks while the job is still ending (rank 0 hangs until the launcher's SIGTERM).
  finish(&s);
  // Rank 0 says it hangs at step 3: rank 1 is then in that step's AllReduce.
  EXPECT_EQ(describe(s.status), describe(run_bare_signalled("bare-sigkill", job, 1, SIGKILL,
                                                            "rank 0 stuck_in_host_code at step 3")));
  const json crash = crash_file(s.job->dump_dir(), 1);
  ASSERT_TRUE(crash.is_object()) << s.job->log();
  EXPECT_EQ(crash["kind"], "died_without_report");
  EXPECT_EQ(crash["pid"], target);
  ASSERT_TRUE(crash["last_inflight"].is_object()) << crash.dump(2);
  EXPECT_EQ(crash["last_inflight"]["name"], "AllReduce");
  EXPECT_NE(s.job->log().find("died without a report"), std::string::npos) << s.job->log();
  EXPECT_TRUE(plugin_line(read_jsonl(s.jsonl), "cpp", 1).is_object()) << read_file(s.jsonl);
}

// ---- Crash forensics in depth (issue 27) ----

// The line of sim_trainer.py that holds `code`, 0 when none does.
int trainer_line_of(const std::string& code) {
  std::istringstream in(read_file(sim_trainer_py()));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(code) != std::string::npos) return n;
  }
  return 0;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// No native frame is a bare "??": one in a module carries module and offset.
void expect_every_frame_resolvable(const json& crash) {
  for (const json& f : crash["frames"]) {
    if (f["module"].is_null()) continue;
    EXPECT_NE(f["function"], "??") << f.dump();
    EXPECT_TRUE(f["module_offset"].is_string()) << f.dump();
  }
}

// The timeline dump folders of crashes.
std::vector<std::string> crash_dumps(const std::string& dump_dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dump_dir.c_str());
  while (dirent* e = d != nullptr ? ::readdir(d) : nullptr) {
    const std::string dir = e->d_name;
    if (dir.rfind("timeline-", 0) == 0 && ends_with(dir, "-crash")) {
      out.push_back(dump_dir + "/" + dir);
    }
  }
  if (d != nullptr) ::closedir(d);
  return out;
}

// The timeline dump folders of a crash hold the dead rank's ring.
bool ring_dumped(const std::string& dump_dir, int rank, int world) {
  char name[64];
  std::snprintf(name, sizeof(name), "/%05d-%05d.timeline", rank, world);
  for (const std::string& dir : crash_dumps(dump_dir)) {
    if (::access((dir + name).c_str(), R_OK) == 0) return true;
  }
  return false;
}

TEST(CrashE2E, SegvOfAPythonRankCarriesThePythonStackOfItsThreads) {
  const auto job = sim_job(
      2, true, {"--steps", "50", "--crash-rank", "1", "--crash-step", "3", "--crash-kind", "segv"});
  Supervised s = start("crash-segv-py", job, {jsonl_plugin()});
  finish(&s);
  EXPECT_EQ(describe(s.status), describe(run_bare("bare-segv-py", job)));
  const std::string log = s.job->log();
  const json crash = crash_file(s.job->dump_dir(), 1);
  ASSERT_TRUE(crash.is_object()) << log;
  ASSERT_TRUE(crash["python"].is_object()) << crash.dump(2);
  ASSERT_EQ(crash["python"]["read"], true) << crash.dump(2);
  const json& crashed = crash["python"]["threads"][0];
  EXPECT_EQ(crashed["crashed"], true);
  EXPECT_EQ(crashed["tid"], crash["tid"]);
  const int line = trainer_line_of("lib.sim_crash_segv()");
  ASSERT_GT(line, 0);
  ASSERT_GE(crashed["frames"].size(), 3u) << crashed.dump(2);
  EXPECT_EQ(crashed["frames"][0]["func"], "crash");
  EXPECT_EQ(crashed["frames"][0]["line"], line);
  EXPECT_TRUE(ends_with(crashed["frames"][0]["file"], "/sim_trainer.py")) << crashed.dump(2);
  EXPECT_EQ(crashed["frames"][1]["func"], "train_step");
  EXPECT_EQ(crashed["frames"].back()["func"], "<module>");
  const std::string expected =
      "died of SIGSEGV at address 0x0 in sim_crash_segv, from crash "
      "(sim_trainer.py:" +
      std::to_string(line) + ")";
  EXPECT_NE(log.find(expected), std::string::npos) << expected << "\n" << log;
  expect_every_frame_resolvable(crash);
  EXPECT_TRUE(ring_dumped(s.job->dump_dir(), 1, 2)) << log;
  // One dump for the incident, whose document names rank 1 crashed (how,
  // where) and no hang.
  const std::vector<std::string> dumps = crash_dumps(s.job->dump_dir());
  ASSERT_EQ(dumps.size(), 1u) << log;
  const json doc = json::parse(read_file(dumps[0] + "/hang.json"), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << read_file(dumps[0] + "/hang.json");
  EXPECT_EQ(doc["hung"], false);
  for (const json& r : doc["ranks"]) {
    if (r["rank"] == 1) {
      EXPECT_EQ(r["state"], "crashed");
      EXPECT_EQ(r["reason"], expected);
    } else {
      EXPECT_NE(r["state"], "stuck");
      EXPECT_NE(r["state"], "missing");
    }
  }

  const json cpp = plugin_line(read_jsonl(s.jsonl), "cpp", 1);
  ASSERT_TRUE(cpp.is_object()) << read_file(s.jsonl);
  const json& stacks = cpp["stack_infos"]["python_stacks"];
  ASSERT_FALSE(stacks.empty()) << cpp.dump(2);
  EXPECT_EQ(stacks[0]["crashed"], true);
  EXPECT_EQ(stacks[0]["frames"][0]["func"], "crash");
  EXPECT_EQ(stacks[0]["frames"][0]["line"], line);
}

// std::terminate in a thread that runs no Python (a NCCL watchdog's way to die).
void abort_in_thread_case(bool python) {
  const auto job = sim_job(2, python,
                           {"--steps", "50", "--crash-rank", "0", "--crash-step", "2",
                            "--crash-kind", "abort-in-thread"});
  const std::string name = python ? "crash-thread-py" : "crash-thread-cpp";
  Supervised s = start(name, job, {jsonl_plugin()});
  finish(&s);
  EXPECT_EQ(describe(s.status), describe(run_bare("bare-" + name, job)));
  const std::string log = s.job->log();
  const json crash = crash_file(s.job->dump_dir(), 0);
  ASSERT_TRUE(crash.is_object()) << log;
  EXPECT_EQ(crash["signal"], SIGABRT);
  EXPECT_EQ(crash["thread_name"], "sim-watchdog");
  EXPECT_TRUE(has_function(crash["frames"], "abort")) << crash.dump(2);
  expect_every_frame_resolvable(crash);
  EXPECT_TRUE(ring_dumped(s.job->dump_dir(), 0, 2)) << log;
  ASSERT_TRUE(crash["python"].is_object()) << crash.dump(2);
  if (!python) {
    EXPECT_EQ(crash["python"]["python_process"], false) << crash.dump(2);
    EXPECT_TRUE(crash["python"]["threads"].empty());
    EXPECT_EQ(crash["summary"].get<std::string>().find("Python"), std::string::npos);
    return;
  }
  ASSERT_EQ(crash["python"]["read"], true) << crash.dump(2);
  const json& threads = crash["python"]["threads"];
  ASSERT_GE(threads.size(), 2u) << crash.dump(2);
  EXPECT_EQ(threads[0]["crashed"], true);
  EXPECT_EQ(threads[0]["name"], "sim-watchdog");
  EXPECT_TRUE(threads[0]["frames"].empty());
  // The main thread waits for the watchdog inside crash(), through ctypes.
  EXPECT_EQ(threads[1]["frames"][0]["func"], "crash") << crash.dump(2);
  EXPECT_EQ(threads[1]["frames"][0]["line"], trainer_line_of("lib.sim_crash_abort_in_thread()"));
  EXPECT_NE(log.find("died of SIGABRT"), std::string::npos) << log;
  EXPECT_NE(log.find(", in thread \"sim-watchdog\", which ran no Python"), std::string::npos)
      << log;
}

TEST(CrashE2E, AbortInANativeThreadOfAPythonRankComesWithThePythonThreads) {
  abort_in_thread_case(true);
}
TEST(CrashE2E, AbortInANativeThreadOfACppRankIsReported) { abort_in_thread_case(false); }

// The rank is the job itself, so the supervisor reaps it and knows its exit:
// under a launcher that reaps it first, the exit status is unknown.
void sigkill_self_case(bool python) {
  const std::string id = simgpu::testing::unique_job_id();
  std::vector<std::string> job = {"env",
                                  "RANK=0",
                                  "WORLD_SIZE=1",
                                  "LOCAL_RANK=0",
                                  "LOCAL_WORLD_SIZE=1",
                                  "GROUP_RANK=0",
                                  "XPU_TIMER_SIM_JOB_ID=" + id};
  const auto trainer = sim_job(1, python,
                               {"--steps", "50", "--step-ms", "10", "--crash-rank", "0",
                                "--crash-step", "3", "--crash-kind", "sigkill-self"});
  job.insert(job.end(), trainer.begin() + 4, trainer.end());  // without the launcher
  const std::string name = python ? "crash-sigkill-py" : "crash-sigkill-cpp";
  Supervised s = start(name, job, {jsonl_plugin()});
  finish(&s);
  simgpu::testing::remove_segments(id);
  const ExitStatus bare = run_bare("bare-" + name, job);
  simgpu::testing::remove_segments(id);
  EXPECT_EQ(describe(s.status), describe(bare));
  const std::string log = s.job->log();
  const json crash = crash_file(s.job->dump_dir(), 0);
  ASSERT_TRUE(crash.is_object()) << log;
  EXPECT_EQ(crash["kind"], "died_without_report");
  EXPECT_EQ(crash["exit_status"]["signal"], SIGKILL) << crash.dump(2);
  if (!crash["oom_evidence"].is_null()) {
    GTEST_SKIP() << "the machine's OOM killer killed something during the test: "
                 << crash["oom_evidence"];
  }
  EXPECT_EQ(crash["death_cause"], "killed by SIGKILL from outside");
  EXPECT_NE(log.find("died without a report: killed by SIGKILL from outside"), std::string::npos)
      << log;
  EXPECT_TRUE(ring_dumped(s.job->dump_dir(), 0, 1)) << log;
  const json cpp = plugin_line(read_jsonl(s.jsonl), "cpp", 0);
  ASSERT_TRUE(cpp.is_object()) << read_file(s.jsonl);
  EXPECT_EQ(cpp["stack_infos"]["signal"], SIGKILL);
  EXPECT_EQ(cpp["stack_infos"]["death_cause"], "killed by SIGKILL from outside");
}

TEST(CrashE2E, SigkillOfAPythonRankIsNamedWithItsCause) { sigkill_self_case(true); }
TEST(CrashE2E, SigkillOfACppRankIsNamedWithItsCause) { sigkill_self_case(false); }

}  // namespace crash_e2e
}  // namespace xpu_timer::testing
