// One-line logging to stderr for every component. Formats into a stack buffer
// and issues a single write(2), so it never allocates and lines from several
// processes do not interleave mid-line. Safe from any thread; used outside
// signal handlers only (vsnprintf is not async-signal-safe by POSIX).
#pragma once

#include <cstdarg>

namespace xpu_timer {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// Component tag shown in every line ("supervisor", "inject[rank 3]").
void set_log_tag(const char* tag);
// Lines below this level are dropped (XPU_TIMER_DEBUG_MODE=1 enables kDebug).
void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);
// "DEBUG", "INFO", "WARN", "ERROR": the level as every log line shows it.
const char* log_level_name(LogLevel level);

void log_line(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace xpu_timer

#define XPU_TIMER_LOG_DEBUG(...)                                           \
  (::xpu_timer::log_enabled(::xpu_timer::LogLevel::kDebug)                 \
       ? ::xpu_timer::log_line(::xpu_timer::LogLevel::kDebug, __VA_ARGS__) \
       : (void)0)
#define XPU_TIMER_LOG_INFO(...) ::xpu_timer::log_line(::xpu_timer::LogLevel::kInfo, __VA_ARGS__)
#define XPU_TIMER_LOG_WARN(...) ::xpu_timer::log_line(::xpu_timer::LogLevel::kWarn, __VA_ARGS__)
#define XPU_TIMER_LOG_ERROR(...) ::xpu_timer::log_line(::xpu_timer::LogLevel::kError, __VA_ARGS__)

// Invariant check: aborts with a message naming the condition. Not for use in
// the injected library's hooks, which must never abort the user's job.
#define XPU_TIMER_CHECK(cond, msg)                                          \
  do {                                                                      \
    if (!(cond)) ::xpu_timer::check_failed(#cond, msg, __FILE__, __LINE__); \
  } while (0)

namespace xpu_timer {
[[noreturn]] void check_failed(const char* cond, const char* msg, const char* file, int line);
}
