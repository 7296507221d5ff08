// Names of the environment variables that both sides know: those the
// supervisor sets for the job's ranks (supervisor/job/job_environment.cc) and
// a few that tests and the supervisor name. The injected library reads them,
// with all its other settings, in one table (inject/settings.h); the
// supervisor's settings are its own table (supervisor/options.cc).
#pragma once

namespace xpu_timer::proto {

// Environment set by the supervisor for the job. Names of our own that have
// no xpu-timer counterpart start with XPU_TIMER_ too.
constexpr const char* kEnvSocket = "XPU_TIMER_SOCKET";    // unix socket path
constexpr const char* kEnvRunDir = "XPU_TIMER_RUN_DIR";   // where status pages are created
constexpr const char* kEnvDisable = "XPU_TIMER_DISABLE";  // "1": hooks pass through
// Where a rank with no supervisor writes xpu_timer_crash-rank<R>-<pid>.txt.
constexpr const char* kEnvCrashDir = "XPU_TIMER_CRASH_DIR";
// The supervisor's pid: each rank names it its allowed tracer under Yama
// ptrace_scope=1 (inject/ptracer_permit.cc).
constexpr const char* kEnvSupervisorPid = "XPU_TIMER_SUPERVISOR_PID";
// "1": debug logging, on both sides.
constexpr const char* kEnvDebugMode = "XPU_TIMER_DEBUG_MODE";
// Not ours, set for the job: the dynamic loader preloads the injected
// library; NCCL >= 2.23 loads it as its profiler plugin.
constexpr const char* kEnvPreload = "LD_PRELOAD";
constexpr const char* kEnvNcclProfilerPlugin = "NCCL_PROFILER_PLUGIN";
// NVTX loads the tool this names at a module's first NVTX call (inject/nvtx_ranges.h).
constexpr const char* kEnvNvtxInjection = "NVTX_INJECTION64_PATH";

}  // namespace xpu_timer::proto
