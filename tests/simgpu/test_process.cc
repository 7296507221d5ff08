#include "tests/simgpu/test_process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

extern char** environ;

namespace xpu_timer::simgpu::testing {
namespace {

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

std::unique_ptr<TestProcess> TestProcess::start(const std::vector<std::string>& argv,
                                                const std::vector<std::string>& env) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    fprintf(stderr, "pipe2: %s\n", strerror(errno));
    return nullptr;
  }
  // Build everything before fork: the child may only call async-signal-safe functions.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& add : env) overridden = overridden || add.substr(0, add.find('=')) == name;
    if (!overridden) env_strings.push_back(entry);
  }
  for (const auto& add : env) env_strings.push_back(add);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(const_cast<char*>(s.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "fork: %s\n", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return nullptr;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: no race with the first kill(-pid)
  close(fds[1]);
  return std::unique_ptr<TestProcess>(new TestProcess(pid, fds[0]));
}

TestProcess::~TestProcess() {
  if (!reaped_) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  } else {
    kill(-pid_, SIGKILL);  // anything the child left behind in its group
  }
  close(out_fd_);
}

bool TestProcess::read_some(double timeout_s) {
  if (eof_) return false;
  pollfd p{out_fd_, POLLIN, 0};
  const int ms = timeout_s <= 0 ? 0 : static_cast<int>(timeout_s * 1000) + 1;
  const int ready = poll(&p, 1, ms);
  if (ready <= 0) return true;
  char buf[4096];
  const ssize_t n = read(out_fd_, buf, sizeof(buf));
  if (n > 0) {
    output_.append(buf, static_cast<size_t>(n));
    return true;
  }
  if (n < 0 && errno == EINTR) return true;
  eof_ = true;
  return false;
}

bool TestProcess::wait_for_output(const std::string& needle, double timeout_s) {
  const double deadline = now_s() + timeout_s;
  while (output_.find(needle) == std::string::npos) {
    const double left = deadline - now_s();
    if (left <= 0 || !read_some(left)) return output_.find(needle) != std::string::npos;
  }
  return true;
}

bool TestProcess::wait_exit(double timeout_s, int* status) {
  const double deadline = now_s() + timeout_s;
  for (;;) {
    read_some(0.02);
    const pid_t r = waitpid(pid_, status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      while (read_some(0.2)) {
      }
      return true;
    }
    if (r < 0 && errno != EINTR) return false;
    if (now_s() >= deadline) return false;
  }
}

bool TestProcess::send_signal(int sig) { return kill(pid_, sig) == 0; }

std::string unique_job_id() {
  static std::atomic<int> counter{0};
  return "simgpu-test-" + std::to_string(getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

void remove_segments(const std::string& job_id) {
  const std::string prefix = "xpu_sim_" + job_id + "_";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

int count_segments(const std::string& job_id) {
  const std::string prefix = "xpu_sim_" + job_id + "_";
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

}  // namespace xpu_timer::simgpu::testing
