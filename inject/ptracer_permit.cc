// Lets the supervisor's stack collectors attach under Yama ptrace_scope=1.
//
// Yama lets a process trace only its descendants. The supervisor is an
// ancestor of every rank, but it attaches from forked collector children
// (so that even a crash of ours releases the rank), which are not. A rank
// may name an allowed tracer with PR_SET_PTRACER; Yama then also allows that
// tracer's descendants. One prctl at load time, before any thread exists;
// without Yama (or without the variable) it does nothing. Any thread never:
// this runs once, from the dynamic loader.
#include <sys/prctl.h>

#include <cstdint>
#include <cstdlib>

#include "common/env_names.h"
#include "common/parse_number.h"

namespace {

__attribute__((constructor)) void xpu_timer_permit_supervisor_ptrace() {
  const char* v = std::getenv(xpu_timer::proto::kEnvSupervisorPid);
  if (v == nullptr || *v == '\0') return;
  const std::optional<int64_t> pid = xpu_timer::parse_int(v, 2, INT64_MAX);
  if (!pid) return;
  // EINVAL without Yama: nothing to permit, nothing to report.
  (void)prctl(PR_SET_PTRACER, static_cast<unsigned long>(*pid), 0, 0, 0);
}

}  // namespace
