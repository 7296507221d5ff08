#include "supervisor/incidents/crash_json.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <string>

#include "supervisor/incidents/crash_symbolizer.h"
#include "supervisor/job/exit_status.h"

namespace xpu_timer::supervisor {
namespace {

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
  s.frames.push_back({0x7f0000001234, "/lib/libsim.so", 0x1234, "sim_crash_segv", 7});
  s.frames.push_back({0x401000, "/bin/trainer", 0x1000, "main", 40});
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
            "rank 2 (pid 900) died without a report (killed by SIGKILL); last in flight: "
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

TEST(CrashSymbolizer, DemanglesAndLeavesCNamesAlone) {
  EXPECT_EQ(demangle("_ZN9xpu_timer3fooEv"), "xpu_timer::foo()");
  EXPECT_EQ(demangle("sim_crash_segv"), "sim_crash_segv");
  EXPECT_EQ(demangle("_Znot_valid"), "_Znot_valid");
}

}  // namespace
}  // namespace xpu_timer::supervisor
