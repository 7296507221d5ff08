// The unix SOCK_SEQPACKET socket the ranks' injected library connects to.
// One packet per message; each connection sends one RegisterMsg, then stays
// open as a liveness link (EOF = the rank's process closed it, usually by
// exiting). On it the rank's signal handler may send one CrashReportMsg; a
// rank's sys.excepthook connects anew and sends one kPythonException. A malformed message costs one log line and the connection, never
// the supervisor. Runs on the asio thread; sockets are created with
// SOCK_CLOEXEC because the supervisor forks the job.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "supervisor/ranks/crash_message.h"
#include "supervisor/ranks/register_message.h"

namespace xpu_timer::supervisor {

class RankLinkServer {
 public:
  // Returns false to refuse the registration (the connection is dropped).
  using RegisterCallback = std::function<bool(uint64_t connection_id, const RankRegistration&)>;
  using DisconnectCallback = std::function<void(uint64_t connection_id)>;

  RankLinkServer(boost::asio::io_context& io, RegisterCallback on_register,
                 DisconnectCallback on_disconnect);
  ~RankLinkServer();

  // `release`: the descriptor a report that awaits release carried (else
  // invalid); closing it lets the waiting rank die (proto::kCrashFlagAwaitsRelease).
  using CrashCallback = std::function<void(SignalReport, UniqueFd release)>;
  using PythonExceptionCallback = std::function<void(PythonExceptionReport)>;
  void set_crash_callbacks(CrashCallback on_crash, PythonExceptionCallback on_exception) {
    on_crash_ = std::move(on_crash);
    on_exception_ = std::move(on_exception);
  }

  // Reads every message already queued on every connection, now: a report
  // sent by a rank just before it died is handled before its death is.
  void drain();

  // Binds and listens on `path`; false with a one-line `error`.
  bool listen(const std::string& path, std::string* error);
  void close();

 private:
  class Connection;
  void accept_next();
  // Accepts every queued connection; false when accept failed (retry armed).
  bool accept_pending();

  boost::asio::io_context& io_;
  boost::asio::posix::stream_descriptor acceptor_;
  boost::asio::steady_timer retry_timer_;  // backs off after EMFILE and the like
  RegisterCallback on_register_;
  DisconnectCallback on_disconnect_;
  CrashCallback on_crash_;
  PythonExceptionCallback on_exception_;
  std::map<uint64_t, std::weak_ptr<Connection>> connections_;
  std::vector<unsigned char> buffer_;  // one message at a time (asio thread)
  uint64_t next_id_ = 1;
  size_t open_connections_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace xpu_timer::supervisor
