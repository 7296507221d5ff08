// The supervisor's HTTP endpoint on --host:--port: Boost.Beast's HTTP/1.1
// parser over Asio, on its own thread and io_context so a slow client or a
// large /metrics never delays the rank socket, the poll loop or signal
// handling. (Debian's cpp-httplib is a split build whose header needs
// libcpp-httplib.so, OpenSSL and brotli at run time; Beast is header-only.)
// Requests are bounded (8 KiB header, 64 KiB body, 10 s per read); a
// malformed one is answered 400 (431 for too large a header, 413 for too
// large a body) with the parser's reason, and its connection closed. At most
// connection_cap() connections are open (64, or a quarter of the descriptor
// limit), three quarters of them from one address; beyond that a newcomer
// replaces the connection that has waited longest without a whole request,
// so a flood of idle connections can neither exhaust descriptors nor keep
// /healthz out. Requests
// that change state pass http_request_guard.h first (403 when a browser page
// of another origin sent them). Routing: http_routes.h.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "supervisor/http/http_routes.h"

namespace xpu_timer::supervisor {

class HttpServer {
 public:
  explicit HttpServer(HttpHandlers handlers);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // listen() + serve(). False with a one-line `error`.
  bool start(const std::string& host, int port, std::string* error);
  // Binds host:port (port 0: any free port) without serving, so that the
  // supervisor can refuse to start before the job exists. The socket is
  // close-on-exec; nothing is accepted before serve(), so a job forked in
  // between inherits no connection. False with a one-line `error`;
  // address_in_use() then says whether another process holds the port.
  bool listen(const std::string& host, int port, std::string* error);
  bool address_in_use() const { return address_in_use_; }
  // Accepts and serves on a new thread; once, after a successful listen().
  void serve();
  int port() const { return port_; }
  void stop();
  // Connections open now, and the most there may be (see http_server.cc's
  // kMaxConnections: a newcomer beyond it replaces the longest-idle one).
  size_t open_connections() const;
  size_t connection_cap() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  int port_ = -1;
  bool address_in_use_ = false;
};

}  // namespace xpu_timer::supervisor
