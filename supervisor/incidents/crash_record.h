// What the supervisor knows about one rank's death: a report the rank sent
// (fatal signal or uncaught Python exception) or, for a rank that died
// without a word (SIGKILL, the OOM killer), what could be learnt from the
// outside. Plain values; built on the asio thread, copied out for HTTP.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "common/status_page_layout.h"
#include "supervisor/incidents/crash_python_stacks.h"
#include "supervisor/ranks/crash_message.h"

namespace xpu_timer::supervisor {

enum class CrashKind { kSignal, kPythonException, kNoReport };
const char* crash_kind_name(CrashKind k);

struct CrashRecord {
  CrashKind kind = CrashKind::kNoReport;
  int rank = 0;
  pid_t pid = 0;
  std::string host;
  double time_unix_s = 0;
  std::optional<SignalReport> signal;                // kSignal
  // kSignal of a crash: the Python threads read while the rank waited in its
  // handler (nullopt: not read, e.g. the rank did not wait).
  std::optional<CrashPythonStacks> python;
  std::string sender;                                // kSignal sent by a process: "pid 12 (comm)"
  std::optional<PythonExceptionReport> exception;    // kPythonException
  // kNoReport: how it ended, when known (we reaped it, or saw its zombie).
  bool exit_known = false;
  bool exit_by_signal = false;
  int exit_value = 0;
  std::string kernel;  // a kernel log line about the pid (OOM killer), "" if none readable
  // kNoReport: an OOM kill counter that grew since the rank was last seen
  // ("memory.events oom_kill went 0->1"), "" when none did or none is readable.
  std::string oom_evidence;
  // Last state of its status page (kept after the process died).
  bool page_ok = false;
  uint32_t inflight_count = 0;
  proto::OpRef oldest_inflight{};
  uint64_t completed_total = 0;
  proto::OpRef last_completed{};
  // Not a failure of its own: ended by the supervisor (a forwarded signal,
  // --on-hang kill) or by the launcher's tear-down. No file, no plugin run.
  bool terminated = false;
  std::string terminated_cause;  // "ended by the launcher after rank 1's crash (SIGSEGV)"
};

}  // namespace xpu_timer::supervisor
