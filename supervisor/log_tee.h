// Supervisor logging: every line goes to stderr through common/log.h (tag
// "xpu_timer supervisor") and a copy goes to <dump-dir>/supervisor.log.
// common/log.h has no sink hook, so the copy is written here with the same
// "[time level] message" shape. One write(2) per line with O_APPEND, so
// lines from several threads never interleave. Any thread.
#pragma once

#include <string>

#include "common/log.h"

namespace xpu_timer::supervisor {

// Opens (truncates) the copy file; returns false with errno set on failure.
// Called once by the main thread before other threads exist.
bool open_log_copy(const std::string& path);
void close_log_copy();

void sup_log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace xpu_timer::supervisor

#define SUP_LOG_DEBUG(...)                                                            \
  (::xpu_timer::log_enabled(::xpu_timer::LogLevel::kDebug)                            \
       ? ::xpu_timer::supervisor::sup_log(::xpu_timer::LogLevel::kDebug, __VA_ARGS__) \
       : (void)0)
#define SUP_LOG_INFO(...) \
  ::xpu_timer::supervisor::sup_log(::xpu_timer::LogLevel::kInfo, __VA_ARGS__)
#define SUP_LOG_WARN(...) \
  ::xpu_timer::supervisor::sup_log(::xpu_timer::LogLevel::kWarn, __VA_ARGS__)
#define SUP_LOG_ERROR(...) \
  ::xpu_timer::supervisor::sup_log(::xpu_timer::LogLevel::kError, __VA_ARGS__)
