// Owns the running job once it is launched: reaps children on SIGCHLD (the
// supervisor is a child subreaper, so orphans of the job are reaped here too),
// forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT (and SIGUSR1/2) to the job's process
// group, SIGKILLs the whole subtree when the job outlives the kill grace, and
// when the job's main process has exited, terminates what it left behind
// before reporting the job's status. Everything runs on the asio thread.
#pragma once

#include <signal.h>

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "supervisor/job/exit_status.h"

namespace xpu_timer::supervisor {

// The signals the controller handles (forwarded to the job, SIGCHLD). Block
// them from before the fork until start(), so that an early Ctrl-C is
// forwarded, not fatal to the supervisor.
sigset_t job_control_signals();

class JobController {
 public:
  using DoneCallback = std::function<void(const JobExit&)>;

  JobController(boost::asio::io_context& io, pid_t child, double kill_grace_s, DoneCallback done);

  // Starts listening to signals; call once, before io.run().
  void start();

  // Asks the job to end (signal `sig` to its process group); SIGKILL to the
  // whole subtree if it has not ended after the kill grace. Idempotent for
  // the grace timer.
  void terminate(int sig, const char* why);

  bool child_exited() const { return child_exit_.has_value(); }

  // Processes of the supervisor's own (exit-hook plugin hosts) that the
  // cleanup of the job's leftovers must not kill.
  void set_spared(std::function<bool(pid_t)> spared) { spared_ = std::move(spared); }
  // Told of every child reaped (ranks orphaned to us keep their status).
  void set_on_reaped(std::function<void(pid_t, int)> on_reaped) {
    on_reaped_ = std::move(on_reaped);
  }
  // Told when the job is first asked to end (signal forwarded or hang kill):
  // the deaths that follow are terminations, not crashes.
  void set_on_terminate(std::function<void(int sig)> on_terminate) {
    on_terminate_ = std::move(on_terminate);
  }

 private:
  void wait_signals();
  void on_signal(int sig);
  void reap();
  void start_cleanup();
  void cleanup_tick();
  void arm_grace_timer();
  void kill_everything();
  void finish();
  std::vector<pid_t> leftovers() const;

  boost::asio::signal_set signals_;
  boost::asio::steady_timer grace_timer_;
  boost::asio::steady_timer cleanup_timer_;
  pid_t child_;
  std::chrono::milliseconds kill_grace_;
  DoneCallback done_;
  std::function<bool(pid_t)> spared_;
  std::function<void(pid_t, int)> on_reaped_;
  std::function<void(int)> on_terminate_;
  std::optional<JobExit> child_exit_;
  bool grace_armed_ = false;
  bool killed_ = false;
  bool finished_ = false;
  std::chrono::steady_clock::time_point cleanup_started_;
  std::chrono::steady_clock::time_point killed_at_;
};

}  // namespace xpu_timer::supervisor
