// The unix SOCK_SEQPACKET socket the ranks' injected library connects to.
// One packet per message; each connection sends one RegisterMsg, then stays
// open as a liveness link (EOF = the rank's process closed it, usually by
// exiting). A malformed message costs one log line and the connection, never
// the supervisor. Runs on the asio thread; sockets are created with
// SOCK_CLOEXEC because the supervisor forks the job.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "supervisor/register_message.h"

namespace xpu_timer::supervisor {

class RankLinkServer {
 public:
  // Returns false to refuse the registration (the connection is dropped).
  using RegisterCallback = std::function<bool(uint64_t connection_id, const RankRegistration&)>;
  using DisconnectCallback = std::function<void(uint64_t connection_id)>;

  RankLinkServer(boost::asio::io_context& io, RegisterCallback on_register,
                 DisconnectCallback on_disconnect);
  ~RankLinkServer();

  // Binds and listens on `path`; false with a one-line `error`.
  bool listen(const std::string& path, std::string* error);
  void close();

 private:
  class Connection;
  void accept_next();

  boost::asio::io_context& io_;
  boost::asio::posix::stream_descriptor acceptor_;
  boost::asio::steady_timer retry_timer_;  // backs off after EMFILE and the like
  RegisterCallback on_register_;
  DisconnectCallback on_disconnect_;
  uint64_t next_id_ = 1;
  size_t open_connections_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace xpu_timer::supervisor
