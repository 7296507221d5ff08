// A raw HTTP/1.0 client for the tests' probes of our servers and of etcd: it
// must not depend on the HTTP code under test. 127.0.0.1 only, one request
// per connection, bounded by 10 s.
#pragma once

#include <optional>
#include <string>

namespace xpu_timer::testing {

// nullopt when the connection or the answer fails.
struct HttpReply {
  int status = 0;
  std::string body;
  std::string head;  // the status line and header fields, CRLF-separated
};
std::optional<HttpReply> http_get(int port, const std::string& path);
// POST with an empty body.
std::optional<HttpReply> http_post(int port, const std::string& path);
// `body` is sent with its Content-Length.
std::optional<HttpReply> http_request(int port, const std::string& method, const std::string& path,
                                      const std::string& body = "");

}  // namespace xpu_timer::testing
