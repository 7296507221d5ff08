#include "supervisor/incidents/crash_json.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <string>
#include <vector>

#include "common/op_names.h"
#include "supervisor/incidents/crash_symbolizer.h"
#include "supervisor/job/exit_status.h"

namespace xpu_timer::supervisor {
namespace {

NativeFrame frame(uint64_t pc, std::string module, uint64_t offset, std::string function,
                  uint64_t func_offset) {
  NativeFrame f;
  f.pc = pc;
  f.module = std::move(module);
  f.module_offset = offset;
  f.function = std::move(function);
  f.func_offset = func_offset;
  return f;
}

CrashRecord segv_record() {
  CrashRecord r;
  r.kind = CrashKind::kSignal;
  r.rank = 1;
  r.pid = 812;
  r.time_unix_s = 1730289517.25;
  SignalReport s;
  s.pid = 812;
  s.rank = 1;
  s.signal = SIGSEGV;
  s.si_code = 1;
  s.fault_addr = 0;
  s.frames.push_back(frame(0x7f0000001234, "/lib/libsim.so", 0x1234, "sim_crash_segv", 7));
  s.frames.push_back(frame(0x401000, "/bin/trainer", 0x1000, "main", 40));
  r.signal = s;
  return r;
}

TEST(CrashJson, SignalRecordHasTheDocumentedShapes) {
  const CrashRecord r = segv_record();
  const auto j = crash_json(r);
  EXPECT_EQ(j["kind"], "signal");
  EXPECT_EQ(j["signal"], SIGSEGV);
  EXPECT_EQ(j["signal_name"], "SIGSEGV");
  EXPECT_EQ(j["fault_address"], "0x0");
  EXPECT_EQ(j["frames"][0]["function"], "sim_crash_segv");
  EXPECT_EQ(j["frames"][0]["module_offset"], "0x1234");
  EXPECT_TRUE(j["exit_status"].is_null());
  EXPECT_EQ(j["summary"], "rank 1 (pid 812) died of SIGSEGV at address 0x0 in sim_crash_segv");

  PluginIdentity id;
  const auto p = plugin_input_json(r, id);
  EXPECT_EQ(p["hook"], "cpp");
  const auto& si = p["stack_infos"];
  EXPECT_EQ(si["signal"], SIGSEGV);
  EXPECT_EQ(si["rank"], 1);
  EXPECT_EQ(si["ip"], "NOT_SET");
  EXPECT_EQ(si["pod_name"], "NOT_SET");
  EXPECT_EQ(si["job_name"], "NOT_SET");
  EXPECT_EQ(si["time"], 1730289517);
  ASSERT_EQ(si["frame_infos"].size(), 2u);
  EXPECT_EQ(si["frame_infos"][0]["address"], 0x7f0000001234ull);
  EXPECT_EQ(si["frame_infos"][0]["offset"], 7);
  EXPECT_EQ(si["frame_infos"][0]["function_name"], "sim_crash_segv");
}

TEST(CrashJson, PluginIdentityComesFromThePodEnvironment) {
  const std::map<std::string, std::string> env = {{"POD_IP", "10.1.2.3"},
                                                  {"POD_NAME", "trainer-worker-7"},
                                                  {"ENV_ARGO_WORKFLOW_NAME", "llm-pretrain"},
                                                  {"XPU_TIMER_JOB_NAME", "ignored"}};
  const PluginIdentity id = plugin_identity([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_EQ(id.ip, "10.1.2.3");
  EXPECT_EQ(id.pod_name, "trainer-worker-7");
  EXPECT_EQ(id.job_name, "llm-pretrain");
  const auto p = plugin_input_json(segv_record(), id);
  EXPECT_EQ(p["stack_infos"]["ip"], "10.1.2.3");
  EXPECT_EQ(p["stack_infos"]["pod_name"], "trainer-worker-7");
  EXPECT_EQ(p["stack_infos"]["job_name"], "llm-pretrain");

  // Our own job name when Argo's is absent; empty values count as unset.
  const PluginIdentity ours = plugin_identity([](const char* name) -> const char* {
    if (std::string(name) == "XPU_TIMER_JOB_NAME") return "job-b";
    if (std::string(name) == "POD_NAME") return "";
    return nullptr;
  });
  EXPECT_EQ(ours.ip, "NOT_SET");
  EXPECT_EQ(ours.pod_name, "NOT_SET");
  EXPECT_EQ(ours.job_name, "job-b");
}

TEST(CrashJson, DeathWithoutReportNamesItsLastOperation) {
  CrashRecord r;
  r.kind = CrashKind::kNoReport;
  r.rank = 2;
  r.pid = 900;
  r.page_ok = true;
  r.inflight_count = 1;
  r.oldest_inflight.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  r.oldest_inflight.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  r.oldest_inflight.comm_hash = 0xabc;
  r.oldest_inflight.seq = 7;
  r.exit_known = true;
  r.exit_by_signal = true;
  r.exit_value = SIGKILL;
  EXPECT_EQ(crash_summary(r),
            "rank 2 (pid 900) died without a report: killed by SIGKILL from outside; last in "
            "flight: "
            "AllReduce #7 on comm 0000000000000abc");
  const auto j = crash_json(r);
  EXPECT_EQ(j["kind"], "died_without_report");
  EXPECT_EQ(j["exit_status"]["signal"], SIGKILL);
  EXPECT_EQ(j["last_inflight"]["name"], "AllReduce");
  const auto p = plugin_input_json(r, PluginIdentity{});
  EXPECT_EQ(p["stack_infos"]["signal"], SIGKILL);
  EXPECT_TRUE(p["stack_infos"]["frame_infos"].empty());
}

TEST(CrashJson, PythonExceptionGoesToThePythonHook) {
  CrashRecord r;
  r.kind = CrashKind::kPythonException;
  r.rank = 0;
  r.pid = 5;
  PythonExceptionReport e;
  e.type_module = "builtins";
  e.type_qualname = "RuntimeError";
  e.message = "simulated";
  e.traceback.push_back({"/x/sim_trainer.py", "crash", 86});
  r.exception = e;
  EXPECT_EQ(crash_summary(r),
            "rank 0 (pid 5) raised an uncaught RuntimeError: simulated (in crash, "
            "sim_trainer.py:86)");
  const auto p = plugin_input_json(r, PluginIdentity{});
  EXPECT_EQ(p["hook"], "python");
  EXPECT_EQ(p["infos"]["rank"], 0);
  EXPECT_EQ(p["exception"]["qualname"], "RuntimeError");
  EXPECT_EQ(p["exception"]["traceback"][0]["line"], 86);
}

TEST(CrashJson, PythonStacksOfASignalNameTheCrashedThreadsInnermostFrame) {
  CrashRecord r = segv_record();
  CrashPythonStacks p;
  p.python_version = "3.11.2";
  CrashPythonThread main_thread;
  main_thread.tid = 812;
  main_thread.name = "python3";
  main_thread.crashed = true;
  main_thread.holds_gil = true;
  main_thread.frames = {{"crash", "/x/sim_trainer.py", 199, true},
                        {"<module>", "/x/train.py", 48, true}};
  CrashPythonThread loader;
  loader.tid = 813;
  loader.name = "pt_data_worker";
  loader.holds_gil = false;
  loader.frames = {{"wait", "/usr/lib/python3.11/threading.py", 320, true}};
  p.threads = {main_thread, loader};
  p.read_ok = true;
  r.python = p;
  const auto j = crash_json(r);
  EXPECT_EQ(j["summary"],
            "rank 1 (pid 812) died of SIGSEGV at address 0x0 in sim_crash_segv, from crash "
            "(sim_trainer.py:199)");
  ASSERT_EQ(j["python"]["threads"].size(), 2u);
  EXPECT_EQ(j["python"]["version"], "3.11.2");
  EXPECT_EQ(j["python"]["threads"][0]["crashed"], true);
  EXPECT_EQ(j["python"]["threads"][0]["holds_gil"], true);
  EXPECT_EQ(j["python"]["threads"][0]["frames"][1]["func"], "<module>");
  EXPECT_EQ(j["python"]["threads"][0]["frames"][1]["line"], 48);
  EXPECT_EQ(j["python"]["threads"][1]["holds_gil"], false);
  const auto plugin = plugin_input_json(r, PluginIdentity{});
  const auto& stacks = plugin["stack_infos"]["python_stacks"];
  ASSERT_EQ(stacks.size(), 2u);
  EXPECT_EQ(stacks[0]["thread_id"], 812);
  EXPECT_EQ(stacks[0]["crashed"], true);
  EXPECT_EQ(stacks[0]["frames"][0]["file"], "/x/sim_trainer.py");
  EXPECT_EQ(stacks[1]["thread_name"], "pt_data_worker");

  // Inside a library function (ctypes' string_at reading address 0): the
  // user's line first, the library's after it.
  r.python->threads[0].frames.insert(
      r.python->threads[0].frames.begin(),
      stack::PythonFrame{"string_at", "/usr/lib/python3.12/ctypes/__init__.py", 525, true});
  EXPECT_EQ(crash_summary(r),
            "rank 1 (pid 812) died of SIGSEGV at address 0x0 in sim_crash_segv, from crash "
            "(sim_trainer.py:199) via string_at (__init__.py:525)");
  // Only library frames: the innermost.
  r.python->threads[0].frames.resize(1);
  EXPECT_EQ(crash_summary(r),
            "rank 1 (pid 812) died of SIGSEGV at address 0x0 in sim_crash_segv, from string_at "
            "(__init__.py:525)");

  // A native thread: said so, and the report is still whole.
  r.python->threads[0].frames.clear();
  r.python->threads[0].name = "sim-watchdog";
  EXPECT_EQ(crash_summary(r),
            "rank 1 (pid 812) died of SIGSEGV at address 0x0 in sim_crash_segv, in thread "
            "\"sim-watchdog\", which ran no Python");
  // A read that failed leaves its reason and no frames.
  r.python = CrashPythonStacks{};
  r.python->errors.push_back("stack collector crashed (signal 11)");
  EXPECT_EQ(crash_summary(r),
            "rank 1 (pid 812) died of SIGSEGV at address 0x0 in sim_crash_segv; Python stacks "
            "not read: stack collector crashed (signal 11)");
  EXPECT_EQ(crash_json(r)["python"]["errors"][0], "stack collector crashed (signal 11)");
  EXPECT_EQ(crash_json(r)["python"]["read"], false);
}

TEST(CrashJson, AFrameNoTableNamesKeepsItsModuleOffsetAndBuildId) {
  CrashRecord r = segv_record();
  NativeFrame anonymous =
      frame(0x7f00000029d90, "/usr/lib/x86_64-linux-gnu/libffi.so.8", 0x7a3c, "", 0);
  anonymous.build_id = "0123abcd";
  NativeFrame wild = frame(0x1234, "", 0, "", 0);
  r.signal->frames = {anonymous, r.signal->frames[0], wild};
  const auto j = crash_json(r);
  EXPECT_EQ(j["frames"][0]["function"], "libffi.so.8+0x7a3c");
  EXPECT_EQ(j["frames"][0]["build_id"], "0123abcd");
  EXPECT_TRUE(j["frames"][0]["named_from"].is_null());
  EXPECT_EQ(j["frames"][2]["function"], "??");  // in no module: nothing better exists
  // The summary names the innermost frame with a real name.
  EXPECT_EQ(j["summary"], "rank 1 (pid 812) died of SIGSEGV at address 0x0 in sim_crash_segv");
  const auto fi = plugin_input_json(r, PluginIdentity{})["stack_infos"]["frame_infos"];
  EXPECT_EQ(fi[0]["function_name"], "libffi.so.8+0x7a3c");
  EXPECT_EQ(fi[0]["module"], "/usr/lib/x86_64-linux-gnu/libffi.so.8");
  EXPECT_EQ(fi[0]["module_offset"], 0x7a3c);
  EXPECT_EQ(fi[0]["build_id"], "0123abcd");
}

TEST(CrashJson, ASigkillIsTheOomKillersOnlyWithItsCounterGrown) {
  CrashRecord r;
  r.kind = CrashKind::kNoReport;
  r.rank = 3;
  r.pid = 77;
  r.exit_known = true;
  r.exit_by_signal = true;
  r.exit_value = SIGKILL;
  r.oom_evidence = "memory.events oom_kill went 0->1";
  EXPECT_EQ(crash_summary(r),
            "rank 3 (pid 77) died without a report: killed by SIGKILL (the OOM killer: "
            "memory.events oom_kill went 0->1)");
  EXPECT_EQ(crash_json(r)["death_cause"],
            "killed by SIGKILL (the OOM killer: memory.events oom_kill went 0->1)");
  EXPECT_EQ(plugin_input_json(r, PluginIdentity{})["stack_infos"]["death_cause"],
            "killed by SIGKILL (the OOM killer: memory.events oom_kill went 0->1)");
  // The OOM killer sends nothing but SIGKILL: another death is not its.
  r.exit_value = SIGTERM;
  EXPECT_EQ(crash_summary(r), "rank 3 (pid 77) died without a report (killed by SIGTERM)");
  EXPECT_TRUE(crash_json(r)["death_cause"].is_null());
  r.exit_by_signal = false;
  r.exit_value = 1;
  EXPECT_EQ(crash_summary(r), "rank 3 (pid 77) died without a report (exit code 1)");
  // Exit unknown (the launcher reaped it): the counter alone says it.
  r.exit_known = false;
  EXPECT_EQ(crash_summary(r),
            "rank 3 (pid 77) died without a report: killed (the OOM killer: memory.events "
            "oom_kill went 0->1)");
  r.oom_evidence.clear();
  EXPECT_EQ(crash_summary(r),
            "rank 3 (pid 77) died without a report (exit status unknown: not a child of the "
            "supervisor)");
}

// Two small modules, kept as the module fuzzer's seeds: tiny.so (a .symtab
// with the static g at 0x266, h at 0x273) and stripped.so (.dynsym only: f at
// 0x24b, 7 bytes).
std::string module_file(const char* name) {
  return std::string(XPU_TIMER_TEST_SOURCE_DIR) +
         "/supervisor/incidents/fuzz/corpus/crash_module_fuzz/" + name;
}

TEST(CrashSymbolizer, NamesFromSymtabThenDynsymAndGivesEveryFrameItsBuildId) {
  const std::string tiny = module_file("tiny.so");
  const std::string stripped = module_file("stripped.so");
  std::vector<NativeFrame> frames = {
      frame(0x1, tiny, 0x26a, "", 0),     frame(0x2, tiny, 0x275, "", 0),
      frame(0x3, stripped, 0x24c, "", 0), frame(0x4, stripped, 0x10, "", 0),
      frame(0x5, tiny, 0x273, "h", 0),    frame(0x6, "/no/such.so", 0x9, "", 0)};
  CrashSymbolizer symbolizer;
  symbolizer.symbolize(&frames);
  const std::string tiny_id = "89f7307fb7df351ee87da8db76b126eae32c83b7";
  const std::string stripped_id = "795c28950497b6ed07313f399560ad5e75b0ffaa";
  EXPECT_EQ(frames[0].function, "g");  // static: only the .symtab knows it
  EXPECT_EQ(frames[0].func_offset, 4u);
  EXPECT_EQ(frames[0].name_source, "symtab");
  EXPECT_EQ(frames[0].build_id, tiny_id);
  EXPECT_EQ(frames[1].function, "h");
  EXPECT_EQ(frames[1].func_offset, 2u);
  EXPECT_EQ(frames[2].function, "f");
  EXPECT_EQ(frames[2].name_source, "dynsym");
  EXPECT_EQ(frames[2].build_id, stripped_id);
  EXPECT_EQ(frames[3].function, "");  // in no symbol: module, offset and build-id
  EXPECT_EQ(frames[3].name_source, "");
  EXPECT_EQ(frames[3].build_id, stripped_id);
  EXPECT_EQ(frame_label(frames[3]), "stripped.so+0x10");
  EXPECT_EQ(frames[4].name_source, "dynsym");  // named by the handler
  EXPECT_EQ(frames[4].build_id, tiny_id);
  EXPECT_EQ(frames[5].build_id, "");  // an unreadable module costs nothing else
  EXPECT_EQ(frame_label(frames[5]), "such.so+0x9");
}

TEST(CrashSymbolizer, DemanglesAndLeavesCNamesAlone) {
  EXPECT_EQ(demangle("_ZN9xpu_timer3fooEv"), "xpu_timer::foo()");
  EXPECT_EQ(demangle("sim_crash_segv"), "sim_crash_segv");
  EXPECT_EQ(demangle("_Znot_valid"), "_Znot_valid");
}

}  // namespace
}  // namespace xpu_timer::supervisor
