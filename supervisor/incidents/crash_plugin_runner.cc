#include "supervisor/incidents/crash_plugin_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <climits>
#include <cstdlib>

#include "supervisor/log_tee.h"
#include "supervisor/job/process_table.h"

extern char** environ;

namespace xpu_timer::supervisor {
namespace {

constexpr size_t kMaxLoggedOutput = 64 * 1024;

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

std::string default_host_script() {
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "plugin_host.py";
  std::string path(exe, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return dir + "/../share/xpu_timer/plugin_host.py";
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

PluginSettings plugin_settings_from(const std::string& plugins, const std::string& python,
                                    const std::string& host) {
  PluginSettings s;
  s.plugins = split_commas(plugins);
  if (!python.empty()) s.python = python;
  s.host_script = host.empty() ? default_host_script() : host;
  return s;
}

void log_plugin_settings(const PluginSettings& s) {
  if (s.plugins.empty()) return;
  std::string names;
  for (const std::string& p : s.plugins) names += (names.empty() ? "" : ", ") + p;
  SUP_LOG_INFO("exit-hook plugins: %s (host %s, timeout %.0f s)", names.c_str(),
               s.host_script.c_str(), s.timeout_s);
  // A plugin that cannot be read would be found only at the first crash.
  for (const std::string& p : s.plugins) {
    if (::access(p.c_str(), R_OK) != 0) {
      SUP_LOG_WARN("exit-hook plugin %s is not readable (%s): it will fail at every crash",
                   p.c_str(), strerror(errno));
    }
  }
  if (::access(s.host_script.c_str(), R_OK) != 0) {
    SUP_LOG_WARN("plugin host %s is not readable (%s): plugins will fail; set XPU_TIMER_PLUGIN_HOST",
                 s.host_script.c_str(), strerror(errno));
  }
}

// One plugin host process: its output pipe, its timeout, its pidfd.
class CrashPluginRunner::Run : public std::enable_shared_from_this<Run> {
 public:
  Run(CrashPluginRunner* runner, pid_t pid, int out_fd, int pidfd, std::string label)
      : runner_(runner),
        alive_(runner->alive_),
        pid_(pid),
        pidfd_(pidfd),
        out_(runner->io_, out_fd),
        timer_(runner->io_),
        label_(std::move(label)) {}
  ~Run() {
    if (pidfd_ >= 0) ::close(pidfd_);
  }

  void start(double timeout_s) {
    auto self = shared_from_this();
    timer_.expires_after(std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000)));
    timer_.async_wait([self, timeout_s](const boost::system::error_code& ec) {
      if (ec || self->done_ || !*self->alive_) return;
      SUP_LOG_WARN("%s: still running after %.0f s (XPU_TIMER_PLUGIN_TIMEOUT): killed",
                   self->label_.c_str(), timeout_s);
      self->kill_host();
      self->finish();
    });
    read_more();
  }

 private:
  void read_more() {
    auto self = shared_from_this();
    out_.async_read_some(boost::asio::buffer(buf_),
                         [self](const boost::system::error_code& ec, size_t n) {
                           if (self->done_ || !*self->alive_) return;
                           if (n > 0) self->take(n);
                           if (ec) {
                             self->flush_line();
                             self->finish();
                             return;
                           }
                           self->read_more();
                         });
  }

  void take(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (buf_[i] == '\n') {
        flush_line();
      } else if (logged_ < kMaxLoggedOutput) {
        line_ += buf_[i];
        ++logged_;
      }
    }
  }

  // The host says "error: ..." when the plugin failed (plugin_host.py), with
  // its traceback indented below: a warning, the rest is information.
  void flush_line() {
    if (line_.empty()) return;
    if (line_.rfind("error: ", 0) == 0) {
      failing_ = true;
    } else if (line_.rfind("  ", 0) != 0) {
      failing_ = false;
    }
    if (failing_) {
      SUP_LOG_WARN("%s: %s", label_.c_str(), line_.c_str());
    } else {
      SUP_LOG_INFO("%s: %s", label_.c_str(), line_.c_str());
    }
    line_.clear();
  }

  void kill_host() {
    // Signal the group only while its leader is unreaped (pidfd signal 0
    // succeeds): its group id cannot have been reused before.
    if (pidfd_ >= 0 && ::syscall(SYS_pidfd_send_signal, pidfd_, 0, nullptr, 0) == 0) {
      ::kill(-pid_, SIGKILL);
      ::syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
    }
  }

  void finish() {
    if (done_) return;
    done_ = true;
    timer_.cancel();
    boost::system::error_code ignored;
    out_.close(ignored);
    runner_->finished(pid_);
  }

  CrashPluginRunner* runner_;
  std::shared_ptr<bool> alive_;
  pid_t pid_;
  int pidfd_;
  boost::asio::posix::stream_descriptor out_;
  boost::asio::steady_timer timer_;
  std::string label_;
  bool failing_ = false;  // the last unindented line was an error
  std::array<char, 4096> buf_{};
  std::string line_;
  size_t logged_ = 0;
  bool done_ = false;
};

CrashPluginRunner::CrashPluginRunner(boost::asio::io_context& io, PluginSettings settings)
    : io_(io), settings_(std::move(settings)) {}

CrashPluginRunner::~CrashPluginRunner() { *alive_ = false; }

void CrashPluginRunner::run(const std::string& input_json, const std::string& what) {
  for (const std::string& plugin : settings_.plugins) {
    const std::string label = "plugin " + base_name(plugin) + " (" + what + ")";
    const int input = static_cast<int>(::syscall(SYS_memfd_create, "xpu_timer_plugin_input",
                                                 static_cast<unsigned>(MFD_CLOEXEC)));
    int out[2] = {-1, -1};
    if (input < 0 || ::pipe2(out, O_CLOEXEC) != 0) {
      SUP_LOG_WARN("%s: not run: %s", label.c_str(), strerror(errno));
      if (input >= 0) ::close(input);
      continue;
    }
    size_t done = 0;
    while (done < input_json.size()) {
      const ssize_t n = ::write(input, input_json.data() + done, input_json.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::lseek(input, 0, SEEK_SET);
    // Everything the child needs is built before fork (other threads exist).
    std::vector<std::string> args = {settings_.python, settings_.host_script, plugin};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      ::sigaction(SIGPIPE, &dfl, nullptr);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::dup2(input, 0);
      ::dup2(out[1], 1);
      ::dup2(out[1], 2);
      ::execvp(argv[0], argv.data());
      const char msg[] = "cannot run the plugin interpreter (XPU_TIMER_PLUGIN_PYTHON)\n";
      ssize_t ignored = ::write(2, msg, sizeof(msg) - 1);
      (void)ignored;
      ::_exit(127);
    }
    ::close(input);
    ::close(out[1]);
    if (pid < 0) {
      SUP_LOG_WARN("%s: fork failed: %s", label.c_str(), strerror(errno));
      ::close(out[0]);
      continue;
    }
    // No reap can run between fork and here (same thread), so the pid is ours.
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    pids_.insert(pid);
    std::make_shared<Run>(this, pid, out[0], pidfd, label)->start(settings_.timeout_s);
  }
}

bool CrashPluginRunner::owns(pid_t pid) const {
  if (pids_.empty()) return false;
  if (pids_.count(pid) != 0) return true;
  const auto st = read_proc_stat(pid);
  return st && pids_.count(st->pgrp) != 0;
}

void CrashPluginRunner::finished(pid_t pid) {
  pids_.erase(pid);
  if (pids_.empty() && idle_) {
    auto done = std::move(idle_);
    idle_ = nullptr;
    done();
  }
}

void CrashPluginRunner::when_idle(std::function<void()> done) {
  if (pids_.empty()) {
    done();
    return;
  }
  idle_ = std::move(done);
}

}  // namespace xpu_timer::supervisor
