#include "supervisor/metrics/job_name.h"

namespace xpu_timer::supervisor {

std::string metrics_job_name(const JobNameSources& s) {
  for (const char* var : {"XPU_TIMER_JOB_NAME", "ENV_ARGO_WORKFLOW_NAME"}) {
    const char* v = s.env ? s.env(var) : nullptr;
    if (v != nullptr && *v != '\0') return v;
  }
  if (!s.job_id.empty()) return s.job_id;
  const size_t slash = s.launcher.rfind('/');
  std::string name = slash == std::string::npos ? s.launcher : s.launcher.substr(slash + 1);
  if (name.empty()) name = "job";
  std::tm utc{};
  char when[32] = "unknown-time";
  if (gmtime_r(&s.start, &utc) != nullptr) std::strftime(when, sizeof(when), "%Y%m%d-%H%M%S", &utc);
  return name + "-" + (s.host.empty() ? std::string("unknown-host") : s.host) + "-" + when;
}

}  // namespace xpu_timer::supervisor
