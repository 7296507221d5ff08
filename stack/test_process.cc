#include "stack/test_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "stack/proc_info.h"

namespace xpu_timer::stack::testing {

TestProcess::TestProcess(std::vector<std::string> argv, bool ready_on_extra_fd) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  // The child's end gets a fixed number (stdout, or 10 for the extra fd).
  int child_fd = ready_on_extra_fd ? 10 : 1;
  for (auto& a : argv)
    if (a == "{fd}") a = std::to_string(child_fd);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], child_fd);  // dup2 clears O_CLOEXEC on the new fd
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  read_fd_ = fds[0];
}

TestProcess::~TestProcess() {
  kill_and_reap();
  if (read_fd_ >= 0) close(read_fd_);
}

std::string TestProcess::wait_for_line(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || read_fd_ < 0) return "";
    pollfd pfd{read_fd_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[256];
    ssize_t n = read(read_fd_, buf, sizeof(buf));
    if (n <= 0) return "";
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void TestProcess::kill_and_reap() {
  if (pid_ <= 0 || reaped_) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  reaped_ = true;
}

bool TestProcess::reap(std::chrono::milliseconds timeout) {
  if (reaped_) return true;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      reaped_ = true;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

char process_state(pid_t pid) {
  auto stat = read_small_file("/proc/" + std::to_string(pid) + "/stat");
  return stat ? parse_stat_state(*stat) : '?';
}

bool no_thread_stopped(pid_t pid) {
  for (pid_t tid : list_tasks(pid)) {
    char st = read_thread_state(pid, tid);
    if (st == 't' || st == 'T') return false;
  }
  return true;
}

bool wait_threads_state(pid_t pid, const std::string& allowed, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    bool ok = true;
    for (pid_t tid : list_tasks(pid))
      if (allowed.find(read_thread_state(pid, tid)) == std::string::npos) ok = false;
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

}  // namespace xpu_timer::stack::testing
