#include "inject/crash_report_text.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace xpu_timer::inject {
namespace {

// Buffers output and writes it in pieces; every call is async-signal-safe.
class SafeWriter {
 public:
  explicit SafeWriter(int fd) : fd_(fd) {}
  ~SafeWriter() { flush(); }
  SafeWriter(const SafeWriter&) = delete;
  SafeWriter& operator=(const SafeWriter&) = delete;

  SafeWriter& str(const char* s) {
    while (*s != '\0') put(*s++);
    return *this;
  }
  SafeWriter& dec(int64_t v) {
    char tmp[24];
    int n = 0;
    const bool neg = v < 0;
    uint64_t u = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    do {
      tmp[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (neg) put('-');
    while (n > 0) put(tmp[--n]);
    return *this;
  }
  SafeWriter& hex(uint64_t v) {
    char tmp[16];
    int n = 0;
    do {
      tmp[n++] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v != 0);
    put('0');
    put('x');
    while (n > 0) put(tmp[--n]);
    return *this;
  }
  bool ok() const { return ok_; }
  void flush() {
    size_t done = 0;
    while (done < len_ && ok_) {
      const ssize_t w = ::write(fd_, buf_ + done, len_ - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) ok_ = false;
      else done += static_cast<size_t>(w);
    }
    len_ = 0;
  }

 private:
  void put(char c) {
    if (len_ == sizeof(buf_)) flush();
    buf_[len_++] = c;
  }
  int fd_;
  bool ok_ = true;
  size_t len_ = 0;
  char buf_[1024];
};

}  // namespace

const char* crash_signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTERM: return "SIGTERM";
    case SIGPIPE: return "SIGPIPE";
    case SIGKILL: return "SIGKILL";
    case SIGINT: return "SIGINT";
    default: return "SIG?";
  }
}

bool write_crash_report_text(const char* path, const proto::CrashReportMsg& msg) {
  const int saved_errno = errno;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    errno = saved_errno;
    return false;
  }
  bool ok;
  {
    SafeWriter w(fd);
    w.str("xpu-timer crash report (no supervisor was listening)\n");
    w.str("rank ").dec(msg.rank).str(" pid ").dec(msg.pid).str(" tid ").dec(msg.tid);
    w.str(" thread \"").str(msg.thread_name).str("\"\n");
    w.str("signal ").dec(msg.signal).str(" (").str(crash_signal_name(msg.signal)).str(") code ");
    w.dec(msg.si_code).str(" fault address ").hex(msg.fault_addr);
    w.str(" sender pid ").dec(msg.sender_pid).str("\n");
    w.str("time unix_ns ").dec(static_cast<int64_t>(msg.realtime_ns)).str("\n");
    w.str("frames (innermost first; module+offset for addr2line):\n");
    for (uint32_t i = 0; i < msg.nframes && i < static_cast<uint32_t>(proto::kCrashMaxFrames);
         ++i) {
      const proto::CrashFrame& f = msg.frames[i];
      w.str("#").dec(i).str(" ").hex(f.pc).str(" ");
      w.str(f.function[0] != '\0' ? f.function : "??");
      if (f.function[0] != '\0') w.str("+").hex(f.func_offset);
      if (f.module >= 0 && f.module < static_cast<int32_t>(msg.nmodules)) {
        w.str(" (").str(msg.modules[f.module].path).str("+").hex(f.module_offset).str(")");
      }
      w.str("\n");
    }
    if (msg.flags & proto::kCrashFlagFramesTruncated) w.str("(more frames not shown)\n");
    w.flush();
    ok = w.ok();
  }
  ::close(fd);
  errno = saved_errno;
  return ok;
}

}  // namespace xpu_timer::inject
