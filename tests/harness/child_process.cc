#include "tests/harness/child_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace xpu_timer::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

ExitStatus from_wait_status(int st) {
  ExitStatus s;
  if (WIFEXITED(st)) {
    s.exited = true;
    s.code = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    s.signaled = true;
    s.signal = WTERMSIG(st);
  }
  return s;
}

milliseconds left_until(steady_clock::time_point deadline) {
  return std::max(milliseconds(0),
                  std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now()));
}

// poll(2) on one fd for at most `timeout` (capped to what an int holds).
int poll_one(int fd, milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(std::min<long long>(timeout.count(), 1 << 30)));
}

// This process's environment with `changes` applied ("NAME=" removes NAME).
std::vector<std::string> child_environment(const std::vector<std::string>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  for (const std::string& kv : changes) {
    const std::string prefix = kv.substr(0, kv.find('=') + 1);
    env.erase(std::remove_if(env.begin(), env.end(),
                             [&](const std::string& e) { return e.rfind(prefix, 0) == 0; }),
              env.end());
    if (kv.size() > prefix.size()) env.push_back(kv);
  }
  return env;
}

void close_fd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

}  // namespace

std::string describe(const ExitStatus& s) {
  if (s.exited) return "exit code " + std::to_string(s.code);
  if (s.signaled) return std::string("signal ") + strsignal(s.signal);
  return "unknown";
}

Child::Child(std::vector<std::string> argv, std::vector<std::string> env, ChildOptions options) {
  // Everything is built before fork(): the child may only make
  // async-signal-safe calls until it execs.
  int out_write = -1;
  if (options.log_path.empty()) {
    output_fd_ = ::memfd_create("child-output", MFD_CLOEXEC);
    // A description of our own with O_APPEND, so that the child and its
    // descendants append without overwriting one another.
    if (output_fd_ >= 0) {
      out_write = ::open(("/proc/self/fd/" + std::to_string(output_fd_)).c_str(),
                         O_WRONLY | O_APPEND | O_CLOEXEC);
    }
  } else {
    out_write = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    output_fd_ = ::open(options.log_path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  int in[2] = {-1, -1};
  int ready[2] = {-1, -1};
  if (out_write < 0 || output_fd_ < 0 || ::pipe2(in, O_CLOEXEC) != 0 ||
      (options.ready_fd >= 0 && ::pipe2(ready, O_CLOEXEC) != 0)) {
    ADD_FAILURE() << "cannot set up the output or pipes of " << argv[0] << ": "
                  << std::strerror(errno);
    for (int* fd : {&out_write, &in[0], &in[1], &ready[0], &ready[1]}) close_fd(fd);
    return;
  }
  for (std::string& a : argv) {
    if (a == "{ready_fd}") a = std::to_string(options.ready_fd);
  }
  std::vector<std::string> envs = child_environment(env);
  std::vector<char*> cargv, cenv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (std::string& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    // dup2 clears close-on-exec on the copies.
    ::dup2(in[0], 0);
    ::dup2(out_write, 1);
    if (options.capture_stderr) ::dup2(out_write, 2);
    if (options.ready_fd >= 0) {
      if (ready[1] == options.ready_fd) {
        ::fcntl(ready[1], F_SETFD, 0);
      } else {
        ::dup2(ready[1], options.ready_fd);
      }
    }
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    const char msg[] = "exec failed\n";
    ssize_t ignored = ::write(2, msg, sizeof(msg) - 1);
    (void)ignored;
    ::_exit(127);
  }
  close_fd(&in[0]);
  close_fd(&out_write);
  close_fd(&ready[1]);
  stdin_fd_ = in[1];
  ready_read_fd_ = ready[0];
  if (pid_ < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return;
  }
  ::setpgid(pid_, pid_);  // also from the parent: no race with a first kill(-pid)
  // A pidfd is readable once the child ended: wait_for() sleeps on it. Close-on-exec;
  // -1 on kernels before 5.3, and wait_for() polls then. (The syscall: glibc
  // 2.36's <sys/pidfd.h> declares pidfd_open without C linkage.)
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
}

std::unique_ptr<Child> Child::start(std::vector<std::string> argv, std::vector<std::string> env,
                                    ChildOptions options) {
  return std::make_unique<Child>(std::move(argv), std::move(env), std::move(options));
}

Child::~Child() {
  if (pid_ > 0) {
    if (status_) {
      ::kill(-pid_, SIGKILL);  // whatever the child left behind in its group
    } else {
      kill_group();
    }
  }
  for (int* fd : {&pidfd_, &stdin_fd_, &output_fd_, &ready_read_fd_}) close_fd(fd);
}

std::string Child::output() const {
  std::string out;
  if (output_fd_ < 0) return out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::pread(output_fd_, buf, sizeof(buf), static_cast<off_t>(out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

bool Child::wait_for_output(const std::string& needle, milliseconds timeout) {
  return wait_until([&] { return output().find(needle) != std::string::npos; }, timeout);
}

std::string Child::wait_ready_line(milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    const size_t nl = ready_buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = ready_buffer_.substr(0, nl);
      ready_buffer_.erase(0, nl + 1);
      return line;
    }
    const milliseconds left = left_until(deadline);
    if (ready_read_fd_ < 0 || left.count() == 0) return "";
    if (poll_one(ready_read_fd_, left) <= 0) continue;
    char buf[256];
    const ssize_t n = ::read(ready_read_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // EOF: a last line without its newline still counts
      close_fd(&ready_read_fd_);
      std::string rest;
      rest.swap(ready_buffer_);
      return rest;
    }
    ready_buffer_.append(buf, static_cast<size_t>(n));
  }
}

void Child::close_stdin() { close_fd(&stdin_fd_); }

std::optional<ExitStatus> Child::wait_for(milliseconds timeout) {
  if (status_ || pid_ <= 0) return status_;
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = from_wait_status(st);
      close_fd(&pidfd_);
      return status_;
    }
    if (r < 0 && errno != EINTR) return std::nullopt;
    const milliseconds left = left_until(deadline);
    if (left.count() == 0) return std::nullopt;
    if (pidfd_ >= 0) {
      poll_one(pidfd_, left);  // readable once the child has ended
    } else {
      std::this_thread::sleep_for(std::min(left, milliseconds(10)));
    }
  }
}

int Child::wait_exit_code(milliseconds timeout) {
  const std::optional<ExitStatus> s = wait_for(timeout);
  return s ? s->shell_code() : -1;
}

bool Child::signal(int sig) { return pid_ > 0 && !status_ && ::kill(pid_, sig) == 0; }

void Child::kill_group() {
  if (pid_ <= 0 || status_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  if (!wait_for(std::chrono::seconds(10))) ADD_FAILURE() << "pid " << pid_ << " survived SIGKILL";
}

ExitStatus run_to_end(std::vector<std::string> argv, std::vector<std::string> env,
                      const std::string& log_path, milliseconds timeout) {
  Child c(std::move(argv), std::move(env), ChildOptions{log_path});
  const std::optional<ExitStatus> s = c.wait_for(timeout);
  if (!s) {
    ADD_FAILURE() << "process did not end within " << timeout.count() << " ms; log " << log_path
                  << ":\n"
                  << read_file(log_path);
    return {};
  }
  return *s;
}

bool wait_until(const std::function<bool()>& pred, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  while (!pred()) {
    if (steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string python3() { return XPU_TIMER_TEST_PYTHON3; }

bool have_python() {
  return Child({python3(), "-c", "import ctypes"}).wait_exit_code(std::chrono::seconds(30)) == 0;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string unique_name(const std::string& prefix) {
  static int counter = 0;
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

namespace {

// The state letter after the ")" that ends the command name; '?' if unreadable.
char state_in_stat(const std::string& path) {
  const std::string line = read_file(path);
  const size_t rp = line.rfind(')');
  return rp != std::string::npos && rp + 2 < line.size() ? line[rp + 2] : '?';
}

}  // namespace

char process_state(pid_t pid) { return state_in_stat("/proc/" + std::to_string(pid) + "/stat"); }

bool process_alive(pid_t pid) {
  const char s = process_state(pid);
  return s != '?' && s != 'Z';
}

std::string thread_states(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::string states;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return states;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const char s = state_in_stat(dir + "/" + e->d_name + "/stat");
    if (s != '?') states += s;  // '?': the thread ended while we listed
  }
  ::closedir(d);
  return states;
}

bool no_thread_stopped(pid_t pid) {
  return thread_states(pid).find_first_of("tT") == std::string::npos;
}

bool wait_threads_state(pid_t pid, const std::string& allowed, milliseconds timeout) {
  return wait_until(
      [&] {
        const std::string states = thread_states(pid);
        return !states.empty() && states.find_first_not_of(allowed) == std::string::npos;
      },
      timeout);
}

}  // namespace xpu_timer::testing
