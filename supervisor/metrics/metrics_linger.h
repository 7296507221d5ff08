// The wait for one last scrape at the job's end. XpuTimerSupervisorDown
// fires when the target goes down while its last scrape said
// xpu_timer_job_running 1; so that a job's end raises nothing, /metrics keeps
// answering (job_running 0) for --metrics-linger, long enough for one more
// scrape, and a termination signal ends that wait (docs/metrics.md "Alerts").
//
// Threads: the asio thread that runs `io`.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>

namespace xpu_timer::supervisor {

class MetricsLinger {
 public:
  // Starts waiting `seconds`; `over` runs once, when they have passed or a
  // signal came. `seconds` <= 0: `over` runs at once.
  MetricsLinger(boost::asio::io_context& io, double seconds, std::function<void()> over);
  MetricsLinger(const MetricsLinger&) = delete;
  MetricsLinger& operator=(const MetricsLinger&) = delete;

 private:
  void end();

  std::function<void()> over_;
  std::unique_ptr<boost::asio::steady_timer> timer_;
  std::unique_ptr<boost::asio::signal_set> signals_;
};

}  // namespace xpu_timer::supervisor
