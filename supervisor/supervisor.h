// Wires the supervisor together: run dir and rank socket, job launch, job
// controller (signals, reaping, exit status), registry, hang detection poll
// loop, HTTP server and dump files. run() returns how the job ended.
//
// Threads: the caller's thread runs the asio io_context (signals, rank
// socket, poll timer, kill timers); the HTTP server has its own threads and
// reaches shared state only through the registry (mutex) and the published
// hang report (mutex).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "supervisor/exit_status.h"
#include "supervisor/hang_detector.h"
#include "supervisor/options.h"
#include "supervisor/rank_registry.h"

namespace xpu_timer::supervisor {

class HttpServer;
class JobController;
class RankLinkServer;

class Supervisor {
 public:
  explicit Supervisor(Options options);
  ~Supervisor();

  // Launches the job and serves until it has ended and its leftovers are
  // gone. Returns the job's end (exec failure: exit code 126/127).
  JobExit run();

 private:
  bool on_register(uint64_t connection_id, const RankRegistration& reg);
  void poll();
  void schedule_poll();
  void on_hang_event(HangEvent event, const HangReport& report);
  std::string hang_json() const;
  std::string ranks_json_text() const;
  std::string metrics_text() const;

  Options options_;
  std::string dump_dir_;  // empty when it could not be created
  boost::asio::io_context io_;
  boost::asio::steady_timer poll_timer_;
  RankRegistry registry_;
  HangDetector detector_;
  std::unique_ptr<proto::StatusPage> poll_scratch_;
  std::unique_ptr<RankLinkServer> link_server_;
  std::unique_ptr<JobController> job_;
  std::unique_ptr<HttpServer> http_;

  mutable std::mutex report_mutex_;
  std::shared_ptr<const HangReport> published_report_;
};

}  // namespace xpu_timer::supervisor
