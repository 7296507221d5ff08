#include "supervisor/job/job_launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/unique_fd.h"

namespace xpu_timer::supervisor {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Child side, between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(const LaunchSpec& spec, char* const* argv, char* const* envp,
                             int report_fd) {
  setpgid(0, 0);
  for (const auto& [sig, action] : spec.restore_signals) sigaction(sig, &action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execvpe(argv[0], argv, envp);
  const int err = errno;
  ssize_t w = write(report_fd, &err, sizeof(err));
  (void)w;
  _exit(exit_code_for_exec_errno(err));
}

}  // namespace

int exit_code_for_exec_errno(int err) { return err == ENOENT ? 127 : 126; }

LaunchResult launch_job(const LaunchSpec& spec) {
  LaunchResult result;
  if (spec.argv.empty()) {
    result.error = "empty command";
    return result;
  }
  std::vector<char*> argv = c_strings(spec.argv);
  std::vector<char*> envp = c_strings(spec.env);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    result.error = std::string("pipe2 failed: ") + strerror(errno);
    return result;
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);

  const pid_t pid = fork();
  if (pid < 0) {
    result.error = std::string("fork failed: ") + strerror(errno);
    return result;
  }
  if (pid == 0) exec_child(spec, argv.data(), envp.data(), write_end.get());

  // Also from the parent, so that the group exists before we ever signal it
  // (EACCES once the child has exec'd is harmless: it did it itself).
  setpgid(pid, pid);
  write_end.reset();
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(read_end.get(), &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.exec_errno = child_errno;
    result.error = spec.argv[0] + ": " + strerror(child_errno);
    return result;
  }
  result.pid = pid;
  return result;
}

struct sigaction ignore_signal(int signo) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction inherited {};
  sigaction(signo, &ignore, &inherited);
  return inherited;
}

}  // namespace xpu_timer::supervisor
