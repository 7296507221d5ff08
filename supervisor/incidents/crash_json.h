// The JSON forms of a CrashRecord: the `crash` object of GET /ranks and of
// <dump-dir>/crash-rank<R>-<pid>.json, the document the plugin host reads on
// stdin (xpu-timer's stack_infos / infos shapes), and the one-line summary
// for the log. Pure.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "supervisor/incidents/crash_record.h"

namespace xpu_timer::supervisor {

// ip, pod_name, job_name of xpu-timer's plugin arguments ("NOT_SET" if unknown).
struct PluginIdentity {
  std::string ip = "NOT_SET";
  std::string pod_name = "NOT_SET";
  std::string job_name = "NOT_SET";
};
// From the variables xpu-timer reads (a Kubernetes pod sets them through the
// downward API): POD_IP, POD_NAME, and ENV_ARGO_WORKFLOW_NAME for the job,
// else our XPU_TIMER_JOB_NAME (the metrics' job label). Unset or empty ones
// stay "NOT_SET". `env` returns nullptr for an unset variable.
PluginIdentity plugin_identity(const std::function<const char*(const char*)>& env);
PluginIdentity plugin_identity_from_env();  // the same over getenv


nlohmann::json crash_json(const CrashRecord& r);

// {"hook":"cpp","stack_infos":{signal,rank,ip,pod_name,job_name,time,frame_infos:[...]}}
// or {"hook":"python","infos":{time,rank,ip,pod_name,job_name},"exception":{...}}.
nlohmann::json plugin_input_json(const CrashRecord& r, const PluginIdentity& id);

// "rank 1 (pid 812) died of SIGSEGV at address 0x0 in sim_crash_segv": the
// rank, then crash_description.
std::string crash_summary(const CrashRecord& r);
// What ended the rank: "died of SIGSEGV at address 0x0 in sim_crash_segv".
std::string crash_description(const CrashRecord& r);

}  // namespace xpu_timer::supervisor
