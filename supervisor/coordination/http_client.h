// A small blocking HTTP/1.1 client for JSON POSTs to one server, made for the
// coordination store (etcd_store.h): every request runs on a new connection
// (Connection: close) and ends, answered or not, by a deadline the caller
// gives. Name lookups are bounded too: a host name is resolved by
// getaddrinfo on a thread of its own, and a lookup still running at the
// deadline is left to finish there and used by a later call. The addresses
// found are kept until a connection to every one of them fails. With a TLS
// context every connection is TLS (tls_stream.h: the server's certificate is
// verified for the host). No redirects, no proxies. Not synchronised: one
// owner thread.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "supervisor/coordination/tls_stream.h"

namespace xpu_timer::supervisor {

struct HttpResponse {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  // `host`: a name, an IPv4 address or an IPv6 address without brackets.
  // `tls` null: plain HTTP.
  HttpClient(std::string host, int port, std::shared_ptr<const TlsContext> tls = nullptr);
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // POSTs `body` (application/json) to `path`. True when a complete answer
  // arrived, whatever its status; false with one line in `error` ("cannot
  // connect: Connection refused", "timed out waiting for the answer",
  // "malformed answer: ...") otherwise. `authorization` ("" for none) is
  // sent as the Authorization header.
  bool post(const std::string& path, const std::string& body, Deadline deadline,
            HttpResponse* response, std::string* error, const std::string& authorization = "");

 private:
  struct Lookup;
  struct Address {
    sockaddr_storage addr;
    socklen_t len;
  };
  bool resolve(Deadline deadline, std::string* error);
  int connect_any(Deadline deadline, std::string* error);

  std::string host_;
  int port_;
  std::string host_header_;
  bool literal_ = false;            // host_ is an address: never looked up
  std::vector<Address> addresses_;  // empty until resolved
  std::shared_ptr<Lookup> lookup_;  // a lookup under way, shared with its thread
  std::shared_ptr<const TlsContext> tls_;
};

}  // namespace xpu_timer::supervisor
