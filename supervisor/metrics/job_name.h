// The job_name label of every series (docs/metrics.md "Labels"). Series of
// different jobs must never share it: `sum by (job_name)` and every alert
// grouped by job would merge them. So it names the job, never only its
// launcher ("torchrun" is every job's launcher).
//
// Pure; the supervisor calls it once at startup.
#pragma once

#include <ctime>
#include <functional>
#include <string>

namespace xpu_timer::supervisor {

struct JobNameSources {
  // Reads an environment variable of the supervisor (the job gets the same
  // environment plus xpu-timer's own variables); nullptr when unset.
  std::function<const char*(const char*)> env;
  // The job id the supervisor was given or found (--job-id, XPU_TIMER_JOB_ID,
  // TORCHELASTIC_RUN_ID, torchrun's --rdzv-id); "" when it found none.
  std::string job_id;
  std::string launcher;   // the command's argv[0]
  std::string host;       // this node's host name
  std::time_t start = 0;  // when the supervisor started (wall clock)
};

// XPU_TIMER_JOB_NAME, else ENV_ARGO_WORKFLOW_NAME (xpu-timer's), else the
// job id, else "<launcher file name>-<host>-<UTC start, YYYYmmdd-HHMMSS>":
// unique per run of a node, and visibly generated.
std::string metrics_job_name(const JobNameSources& s);

}  // namespace xpu_timer::supervisor
