// Lets the supervisor's stack collectors attach under Yama ptrace_scope=1.
//
// Yama lets a process trace only its descendants. The supervisor is an
// ancestor of every rank, but it attaches from forked collector children
// (so that even a crash of ours releases the rank), which are not. A rank
// may name an allowed tracer with PR_SET_PTRACER; Yama then also allows that
// tracer's descendants. One prctl at load time, before any thread exists;
// without Yama (or without XPU_TIMER_SUPERVISOR_PID) it does nothing. Any
// thread never: this runs once, from the dynamic loader, after the settings
// were read (their constructor comes first: inject/settings.h).
#include <sys/prctl.h>

#include "inject/settings.h"

namespace {

__attribute__((constructor)) void xpu_timer_permit_supervisor_ptrace() {
  const int64_t pid = xpu_timer::inject::settings().supervisor_pid;
  if (pid == 0) return;  // none
  // EINVAL without Yama: nothing to permit, nothing to report.
  (void)prctl(PR_SET_PTRACER, static_cast<unsigned long>(pid), 0, 0, 0);
}

}  // namespace
