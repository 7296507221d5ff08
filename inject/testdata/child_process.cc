#include "inject/testdata/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern char** environ;

namespace xpu_timer::inject::testing {
namespace {

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string name_of(const std::string& entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

std::unique_ptr<ChildProcess> ChildProcess::start(const std::vector<std::string>& argv,
                                                  const std::vector<std::string>& env,
                                                  const std::vector<std::string>& unset) {
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool drop = false;
    for (const auto& u : unset) drop |= name_of(entry) == u;
    for (const auto& o : env) drop |= name_of(entry) == name_of(o);
    if (!drop) envs.push_back(entry);
  }
  for (const auto& o : env) envs.push_back(o);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return nullptr;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return nullptr;
  }
  const pid_t pid = fork();
  if (pid < 0) return nullptr;
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(in[0]);
  close(out[1]);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->in_fd_ = in[1];
  child->out_fd_ = out[0];
  return child;
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(-pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  if (in_fd_ >= 0) close(in_fd_);
  if (out_fd_ >= 0) close(out_fd_);
}

bool ChildProcess::read_some(double timeout_s) {
  if (eof_) return false;
  pollfd p{out_fd_, POLLIN, 0};
  const int n = poll(&p, 1, static_cast<int>(timeout_s * 1000));
  if (n <= 0) return true;
  char buf[4096];
  const ssize_t r = read(out_fd_, buf, sizeof(buf));
  if (r <= 0) {
    eof_ = true;
    return false;
  }
  output_.append(buf, static_cast<size_t>(r));
  return true;
}

bool ChildProcess::wait_for_output(const std::string& needle, double timeout_s) {
  const double deadline = now_s() + timeout_s;
  while (output_.find(needle) == std::string::npos) {
    const double left = deadline - now_s();
    if (left <= 0 || !read_some(left < 0.1 ? left : 0.1)) {
      return output_.find(needle) != std::string::npos;
    }
  }
  return true;
}

void ChildProcess::close_stdin() {
  if (in_fd_ >= 0) close(in_fd_);
  in_fd_ = -1;
}

int ChildProcess::wait_exit(double timeout_s) {
  const double deadline = now_s() + timeout_s;
  for (;;) {
    while (read_some(0)) {
      if (eof_) break;
      pollfd p{out_fd_, POLLIN, 0};
      if (poll(&p, 1, 0) <= 0) break;
    }
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      while (read_some(0.05)) {
      }
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return -(128 + WTERMSIG(status));
    }
    if (now_s() > deadline) return -1;
    read_some(0.02);
  }
}

}  // namespace xpu_timer::inject::testing
