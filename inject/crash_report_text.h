// The text form of a crash report, written by the signal handler when there
// is no supervisor to send it to: xpu_timer_crash-rank<R>-<pid>.txt. Only
// open/write/close and hand-made number formatting (no stdio, no malloc).
#pragma once

#include "common/rank_messages.h"

namespace xpu_timer::inject {

// "SIGSEGV", ..., or "SIG?" for a number we do not name.
const char* crash_signal_name(int sig);

// Creates `path` and writes the report; false when open or write failed.
bool write_crash_report_text(const char* path, const proto::CrashReportMsg& msg);

}  // namespace xpu_timer::inject
