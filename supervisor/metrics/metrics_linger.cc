#include "supervisor/metrics/metrics_linger.h"

#include <signal.h>

#include <chrono>

#include "supervisor/job/exit_status.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {

MetricsLinger::MetricsLinger(boost::asio::io_context& io, double seconds,
                             std::function<void()> over)
    : over_(std::move(over)) {
  if (seconds <= 0) {
    end();
    return;
  }
  SUP_LOG_INFO(
      "/metrics answers xpu_timer_job_running 0 for %.3g s more, so that Prometheus sees "
      "the job's end (--metrics-linger; a signal ends the wait)",
      seconds);
  timer_ = std::make_unique<boost::asio::steady_timer>(io);
  timer_->expires_after(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds)));
  timer_->async_wait([this](const boost::system::error_code& ec) {
    if (!ec) end();
  });
  signals_ = std::make_unique<boost::asio::signal_set>(io);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    boost::system::error_code ec;
    signals_->add(sig, ec);
    if (ec) SUP_LOG_WARN("cannot watch signal %d: %s", sig, ec.message().c_str());
  }
  signals_->async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    SUP_LOG_INFO("%s received: exiting without waiting for the last scrape",
                 signal_name(sig).c_str());
    end();
  });
}

void MetricsLinger::end() {
  if (timer_) timer_->cancel();
  if (signals_) {
    boost::system::error_code ignored;
    signals_->cancel(ignored);
  }
  if (over_) std::exchange(over_, nullptr)();
}

}  // namespace xpu_timer::supervisor
