#include "tests/simgpu/rank_group.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace xpu_timer::simgpu {
namespace {

double monotonic_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "SIG" + std::to_string(sig);
}

void remove_job_segments(const std::string& job_id) {
  const std::string prefix = "xpu_sim_" + job_id + "_";
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) {
    fprintf(stderr, "%s: opendir(/dev/shm): %s\n", kLauncherTag, strerror(errno));
    return;
  }
  while (dirent* entry = readdir(dir)) {
    if (strncmp(entry->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    const std::string path = std::string("/dev/shm/") + entry->d_name;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      fprintf(stderr, "%s: unlink(%s): %s\n", kLauncherTag, path.c_str(), strerror(errno));
    }
  }
  closedir(dir);
}

RankGroup::RankGroup(LaunchConfig config) : config_(std::move(config)) {
  ranks_.resize(static_cast<size_t>(config_.nproc));
}

bool RankGroup::block_signals() {
  sigemptyset(&taken_);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&taken_, sig);
  if (sigprocmask(SIG_BLOCK, &taken_, &original_mask_) != 0) {
    fprintf(stderr, "%s: sigprocmask: %s\n", kLauncherTag, strerror(errno));
    return false;
  }
  return true;
}

bool RankGroup::spawn(int rank) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "%s: fork for rank %d: %s\n", kLauncherTag, global_rank(rank), strerror(errno));
    return false;
  }
  if (pid == 0) {
    // Child: die with the launcher (CI must never leak ranks), restore the
    // signal mask, set torchrun's environment, exec.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
    sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
    setenv("RANK", std::to_string(global_rank(rank)).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(config_.nnodes * config_.nproc).c_str(), 1);
    setenv("LOCAL_WORLD_SIZE", std::to_string(config_.nproc).c_str(), 1);
    setenv("GROUP_RANK", std::to_string(config_.node_rank).c_str(), 1);
    setenv("XPU_TIMER_SIM_JOB_ID", config_.job_id.c_str(), 1);
    std::vector<char*> argv;
    for (auto& arg : config_.command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    fprintf(stderr, "%s: rank %d: exec %s: %s\n", kLauncherTag, global_rank(rank), argv[0],
            strerror(errno));
    _exit(127);
  }
  ranks_[static_cast<size_t>(rank)] = Rank{pid, true};
  return true;
}

void RankGroup::signal_all(int sig) {
  for (const auto& r : ranks_) {
    if (r.running && kill(r.pid, sig) != 0 && errno != ESRCH) {
      fprintf(stderr, "%s: kill(%d, %s): %s\n", kLauncherTag, r.pid, signal_name(sig).c_str(),
              strerror(errno));
    }
  }
}

void RankGroup::start_termination(double now_s) {
  if (terminating_) return;
  terminating_ = true;
  kill_deadline_s_ = now_s + config_.grace_s;
}

void RankGroup::reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0) return;
    if (pid < 0) {
      if (errno == EINTR) continue;
      if (errno != ECHILD) fprintf(stderr, "%s: waitpid: %s\n", kLauncherTag, strerror(errno));
      return;
    }
    int rank = -1;
    for (size_t i = 0; i < ranks_.size(); ++i) {
      if (ranks_[i].running && ranks_[i].pid == pid) rank = static_cast<int>(i);
    }
    if (rank < 0) continue;
    ranks_[static_cast<size_t>(rank)].running = false;
    int code = 0;
    std::string how;
    if (WIFEXITED(status)) {
      code = WEXITSTATUS(status);
      how = "exited with code " + std::to_string(code);
    } else if (WIFSIGNALED(status)) {
      code = 128 + WTERMSIG(status);
      how = "was killed by signal " + signal_name(WTERMSIG(status)) + " (" +
            std::to_string(WTERMSIG(status)) + ")";
    }
    if (code == 0) continue;
    // Ranks we terminated ourselves are not news; the first failure is.
    if (!failed_ && !terminating_) {
      failed_ = true;
      exit_code_ = code;
      fprintf(stderr, "%s: rank %d (pid %d) %s; terminating the other ranks\n", kLauncherTag,
              global_rank(rank), pid, how.c_str());
      signal_all(SIGTERM);
      start_termination(monotonic_s());
    } else {
      fprintf(stderr, "%s: rank %d (pid %d) %s\n", kLauncherTag, global_rank(rank), pid,
              how.c_str());
    }
  }
}

int RankGroup::run() {
  for (int rank = 0; rank < config_.nproc; ++rank) {
    if (!spawn(rank)) {
      failed_ = true;
      exit_code_ = 1;
      signal_all(SIGTERM);
      start_termination(monotonic_s());
      break;
    }
  }
  for (;;) {
    reap();
    bool any = false;
    for (const auto& r : ranks_) any = any || r.running;
    if (!any) break;
    const double now = monotonic_s();
    if (terminating_ && !killed_ && now >= kill_deadline_s_) {
      fprintf(stderr, "%s: ranks still alive %.1f s after SIGTERM; sending SIGKILL\n", kLauncherTag,
              config_.grace_s);
      signal_all(SIGKILL);
      killed_ = true;
    }
    timespec timeout{0, 100L * 1000 * 1000};
    siginfo_t info{};
    const int sig = sigtimedwait(&taken_, &info, &timeout);
    if (sig < 0) {
      if (errno != EAGAIN && errno != EINTR) {
        fprintf(stderr, "%s: sigtimedwait: %s\n", kLauncherTag, strerror(errno));
      }
      continue;
    }
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      fprintf(stderr, "%s: got %s, forwarding to the ranks\n", kLauncherTag,
              signal_name(sig).c_str());
      if (received_signal_ == 0) received_signal_ = sig;
      signal_all(sig);
      start_termination(monotonic_s());
    }
  }
  if (received_signal_ != 0) return 128 + received_signal_;
  return failed_ ? exit_code_ : 0;
}

}  // namespace xpu_timer::simgpu
