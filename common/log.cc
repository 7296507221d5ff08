#include "common/log.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace xpu_timer {
namespace {
char g_tag[48] = "xpu_timer";
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
}  // namespace

void set_log_tag(const char* tag) { std::snprintf(g_tag, sizeof(g_tag), "%s", tag); }
void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
const char* log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
}

bool log_enabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

void log_line(LogLevel level, const char* fmt, ...) {
  if (!log_enabled(level)) return;
  char buf[2048];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  localtime_r(&ts.tv_sec, &tm);
  int n = std::snprintf(buf, sizeof(buf), "[%02d:%02d:%02d.%03ld %s %s] ", tm.tm_hour, tm.tm_min,
                        tm.tm_sec, ts.tv_nsec / 1000000, g_tag, log_level_name(level));
  if (n < 0) return;
  va_list ap;
  va_start(ap, fmt);
  int m = std::vsnprintf(buf + n, sizeof(buf) - static_cast<size_t>(n) - 1, fmt, ap);
  va_end(ap);
  if (m < 0) return;
  size_t len = std::strlen(buf);
  buf[len++] = '\n';
  // One write: a short write to a pipe of < PIPE_BUF bytes cannot interleave.
  ssize_t w = ::write(STDERR_FILENO, buf, len);
  (void)w;
}

void check_failed(const char* cond, const char* msg, const char* file, int line) {
  log_line(LogLevel::kError, "CHECK failed at %s:%d: %s: %s", file, line, cond, msg);
  std::abort();
}

}  // namespace xpu_timer
