#include "supervisor/log_tee.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace xpu_timer::supervisor {
namespace {

std::atomic<int> g_copy_fd{-1};

}  // namespace

bool open_log_copy(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const int old = g_copy_fd.exchange(fd);
  if (old >= 0) ::close(old);
  return true;
}

void close_log_copy() {
  const int old = g_copy_fd.exchange(-1);
  if (old >= 0) ::close(old);
}

void sup_log(LogLevel level, const char* fmt, ...) {
  if (!log_enabled(level)) return;
  char msg[1900];
  va_list ap;
  va_start(ap, fmt);
  const int m = std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (m < 0) return;
  log_line(level, "%s", msg);

  const int fd = g_copy_fd.load();
  if (fd < 0) return;
  char line[2048];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  localtime_r(&ts.tv_sec, &tm);
  int n = std::snprintf(line, sizeof(line), "[%04d-%02d-%02d %02d:%02d:%02d.%03ld %s] %s\n",
                        tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                        tm.tm_sec, ts.tv_nsec / 1000000, log_level_name(level), msg);
  if (n < 0) return;
  if (static_cast<size_t>(n) >= sizeof(line)) {
    n = sizeof(line) - 1;
    line[n - 1] = '\n';
  }
  // A failing log copy must not disturb the supervisor: the stderr line exists.
  const ssize_t w = ::write(fd, line, static_cast<size_t>(n));
  (void)w;
}

}  // namespace xpu_timer::supervisor
