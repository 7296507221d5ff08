#include "supervisor/job/job_controller.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "supervisor/log_tee.h"
#include "supervisor/job/process_table.h"

namespace xpu_timer::supervisor {

sigset_t job_control_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
    sigaddset(&set, sig);
  }
  return set;
}
namespace {

constexpr auto kCleanupPoll = std::chrono::milliseconds(50);
// After SIGKILL a process in uninterruptible sleep may linger; do not wait
// for it for ever, the job's status is already known.
constexpr auto kAfterKillWait = std::chrono::seconds(5);

}  // namespace

JobController::JobController(boost::asio::io_context& io, pid_t child, double kill_grace_s,
                             DoneCallback done)
    : signals_(io),
      grace_timer_(io),
      cleanup_timer_(io),
      child_(child),
      kill_grace_(static_cast<long long>(kill_grace_s * 1000.0)),
      done_(std::move(done)) {}

void JobController::start() {
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
    boost::system::error_code ec;
    signals_.add(sig, ec);
    if (ec) SUP_LOG_ERROR("cannot watch signal %d: %s", sig, ec.message().c_str());
  }
  wait_signals();
  // A child that ended before the handler existed sent its SIGCHLD to nobody.
  reap();
}

void JobController::wait_signals() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;  // cancelled at shutdown
    on_signal(sig);
    wait_signals();
  });
}

void JobController::on_signal(int sig) {
  if (sig == SIGCHLD) {
    reap();
    return;
  }
  if (sig == SIGUSR1 || sig == SIGUSR2) {
    if (!child_exited()) kill(-child_, sig);
    return;
  }
  terminate(sig, "the supervisor received it");
}

void JobController::terminate(int sig, const char* why) {
  if (child_exited()) return;  // cleanup of the leftovers is already under way
  SUP_LOG_INFO("sending signal %d (%s) to the job's process group %d: %s", sig, strsignal(sig),
               child_, why);
  if (on_terminate_) on_terminate_(sig);
  if (kill(-child_, sig) != 0 && errno != ESRCH) {
    SUP_LOG_WARN("kill(-%d, %d) failed: %s", child_, sig, strerror(errno));
  }
  arm_grace_timer();
}

void JobController::arm_grace_timer() {
  if (grace_armed_) return;
  grace_armed_ = true;
  grace_timer_.expires_after(kill_grace_);
  grace_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    if (!child_exited()) {
      SUP_LOG_WARN("the job is still running %.1f s after it was asked to end: SIGKILL",
                   kill_grace_.count() / 1000.0);
      kill_everything();
    }
  });
}

void JobController::kill_everything() {
  killed_ = true;
  killed_at_ = std::chrono::steady_clock::now();
  // The group is safe to signal only while its leader is unreaped (its pid,
  // hence the group id, cannot be reused before).
  if (!child_exited()) kill(-child_, SIGKILL);
  for (pid_t p : leftovers()) kill(p, SIGKILL);
}

std::vector<pid_t> JobController::leftovers() const {
  std::vector<pid_t> out;
  for (pid_t p : descendants_of(getpid())) {
    if (!spared_ || !spared_(p)) out.push_back(p);
  }
  return out;
}

void JobController::reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) break;  // 0: children left but none ended; -1 ECHILD: none left
    if (on_reaped_) on_reaped_(pid, status);
    if (pid == child_ && (WIFEXITED(status) || WIFSIGNALED(status)) && !child_exit_) {
      child_exit_ = job_exit_from_wait_status(status);
      SUP_LOG_INFO("job (pid %d) ended with %s", child_, describe(*child_exit_).c_str());
      start_cleanup();
    }
  }
}

void JobController::start_cleanup() {
  grace_timer_.cancel();
  cleanup_started_ = std::chrono::steady_clock::now();
  // The job's main process is gone: the group can no longer be signalled
  // safely, but every process it left is our descendant (subreaper).
  const std::vector<pid_t> left = leftovers();
  if (left.empty()) {
    finish();
    return;
  }
  SUP_LOG_INFO("the job left %zu process(es) behind: SIGTERM, SIGKILL after %.1f s", left.size(),
               kill_grace_.count() / 1000.0);
  for (pid_t p : left) kill(p, SIGTERM);
  cleanup_tick();
}

void JobController::cleanup_tick() {
  reap();
  if (finished_) return;
  const std::vector<pid_t> left = leftovers();
  const auto now = std::chrono::steady_clock::now();
  if (left.empty()) {
    finish();
    return;
  }
  if (!killed_ && now - cleanup_started_ >= kill_grace_) {
    SUP_LOG_WARN("%zu leftover process(es) ignored SIGTERM for %.1f s: SIGKILL", left.size(),
                 kill_grace_.count() / 1000.0);
    kill_everything();
  } else if (killed_ && now - killed_at_ >= kAfterKillWait) {
    SUP_LOG_ERROR("%zu process(es) survive SIGKILL (uninterruptible sleep?); exiting anyway",
                  left.size());
    finish();
    return;
  } else if (killed_) {
    for (pid_t p : left) kill(p, SIGKILL);  // new ones may have appeared
  }
  cleanup_timer_.expires_after(kCleanupPoll);
  cleanup_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) cleanup_tick();
  });
}

void JobController::finish() {
  if (finished_) return;
  finished_ = true;
  grace_timer_.cancel();
  cleanup_timer_.cancel();
  boost::system::error_code ec;
  signals_.cancel(ec);
  if (done_) done_(*child_exit_);
}

}  // namespace xpu_timer::supervisor
