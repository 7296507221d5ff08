// The HTTP server on a loopback socket: raw requests, malformed or
// cross-origin, and the exact status lines they get; and the request guard's
// rules on their own.
#include "supervisor/http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "supervisor/http/http_request_guard.h"

namespace xpu_timer::supervisor {
namespace {

// Sends `request` on a new connection, half-closes it, and returns all the
// server sent until it closed (bounded by 10 s).
std::string exchange(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "socket failed";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "connect failed";
  }
  for (size_t done = 0; done < request.size();) {
    const ssize_t n = ::send(fd, request.data() + done, request.size() - done, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer and stop reading early
    done += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string status_line(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

std::string body(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpHandlers h{[] { return std::string("{}"); }, [] { return std::string("[]"); },
                   [] { return std::string(""); }};
    h.dump_stacks = [this](std::string* json) {
      ++dumps_;
      *json = "{\"dir\":\"/d\"}";
      return 202;
    };
    h.config_json = [] { return std::string("{}"); };
    h.set_config = [this](const std::string& body, const std::string& peer, std::string* reply) {
      ++config_posts_;
      std::lock_guard<std::mutex> lock(mutex_);
      config_seen_ = body + " from " + peer;
      *reply = "{}";
      return 200;
    };
    server_ = std::make_unique<HttpServer>(std::move(h));
    std::string error;
    ASSERT_TRUE(server_->start("127.0.0.1", 0, &error)) << error;
    port_ = std::to_string(server_->port());
  }

  std::string post_config(const std::string& headers, const std::string& json) {
    return exchange(server_->port(), "POST /config HTTP/1.1\r\n" + headers +
                                         "Content-Length: " + std::to_string(json.size()) +
                                         "\r\nConnection: close\r\n\r\n" + json);
  }

  std::string post_dump(const std::string& headers) {
    return exchange(server_->port(), "POST /dump/stacks HTTP/1.1\r\n" + headers +
                                         "Content-Length: 0\r\nConnection: close\r\n\r\n");
  }

  std::unique_ptr<HttpServer> server_;
  std::string port_;
  std::atomic<int> dumps_{0};
  std::atomic<int> config_posts_{0};
  std::mutex mutex_;
  std::string config_seen_;  // the last POST /config's body and peer
};

TEST_F(HttpServerTest, WellFormedRequestIsAnswered) {
  const std::string r =
      exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(status_line(r), "HTTP/1.1 200 OK");
  EXPECT_EQ(body(r), "ok\n");
}

TEST_F(HttpServerTest, MalformedRequestLineIsA400WithTheReason) {
  std::string r = exchange(server_->port(), "GET /healthz HTTP/9.x\r\n\r\n");
  EXPECT_EQ(status_line(r), "HTTP/1.1 400 Bad Request") << r;
  EXPECT_EQ(body(r), "bad request: bad version\n");
  EXPECT_NE(r.find("\r\nConnection: close\r\n"), std::string::npos) << r;

  r = exchange(server_->port(), "G(T / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(status_line(r), "HTTP/1.1 400 Bad Request") << r;
  EXPECT_EQ(body(r), "bad request: bad method\n");
}

TEST_F(HttpServerTest, MalformedHeaderIsA400) {
  const std::string r =
      exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n");
  EXPECT_EQ(status_line(r), "HTTP/1.1 400 Bad Request") << r;
  EXPECT_EQ(body(r), "bad request: bad field\n");
}

TEST_F(HttpServerTest, OversizedHeaderIsA431) {
  const std::string r = exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " +
                                                      std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_EQ(status_line(r), "HTTP/1.1 431 Request Header Fields Too Large") << r;
  EXPECT_EQ(body(r), "request header fields too large (limit 8192 bytes)\n");
}

TEST_F(HttpServerTest, OversizedBodyIsA413) {
  const std::string r =
      exchange(server_->port(),
               "POST /dump/stacks HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n" +
                   std::string(100000, 'x'));
  EXPECT_EQ(status_line(r), "HTTP/1.1 413 Payload Too Large") << r;
  EXPECT_EQ(body(r), "request body too large (limit 65536 bytes)\n");
  EXPECT_EQ(dumps_, 0);
}

TEST_F(HttpServerTest, CrossOriginPostIsRefusedAndDumpsNothing) {
  const std::string r =
      post_dump("Host: 127.0.0.1:" + port_ + "\r\nOrigin: http://evil.example\r\n");
  EXPECT_EQ(status_line(r), "HTTP/1.1 403 Forbidden") << r;
  EXPECT_EQ(body(r),
            "refused: cross-origin request from 'http://evil.example'; only tools that send no "
            "Origin header (curl, scripts) may POST here\n");
  EXPECT_EQ(status_line(post_dump("Host: 127.0.0.1:" + port_ + "\r\nOrigin: null\r\n")),
            "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(dumps_, 0);
}

// POST /config changes what declares a hang: a page of another origin, or
// of a name rebound to us, must not reach it; the handler gets the body and
// the client's address (for the log) otherwise.
TEST_F(HttpServerTest, ConfigPostOnlyFromThisOriginReachesItsHandler) {
  const std::string json = "{\"hang_timeout_s\": 1}";
  std::string r =
      post_config("Host: 127.0.0.1:" + port_ + "\r\nOrigin: http://evil.example\r\n", json);
  EXPECT_EQ(status_line(r), "HTTP/1.1 403 Forbidden") << r;
  r = post_config("Host: evil.example:" + port_ + "\r\n", json);
  EXPECT_EQ(status_line(r), "HTTP/1.1 403 Forbidden") << r;
  EXPECT_EQ(config_posts_, 0);
  r = post_config("Host: 127.0.0.1:" + port_ + "\r\nOrigin: http://127.0.0.1:" + port_ + "\r\n",
                  json);
  EXPECT_EQ(status_line(r), "HTTP/1.1 200 OK") << r;
  EXPECT_EQ(config_posts_, 1);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    EXPECT_EQ(config_seen_, json + " from 127.0.0.1");
  }
  r = exchange(server_->port(),
               "PUT /config HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(status_line(r), "HTTP/1.1 405 Method Not Allowed") << r;
}

TEST_F(HttpServerTest, ForeignHostNameIsRefused) {
  // DNS rebinding: evil.example re-pointed at 127.0.0.1 after the page loaded.
  const std::string r = post_dump("Host: evil.example:" + port_ +
                                  "\r\nOrigin: http://evil.example:" + port_ + "\r\n");
  EXPECT_EQ(status_line(r), "HTTP/1.1 403 Forbidden") << r;
  EXPECT_EQ(body(r), "refused: Host 'evil.example:" + port_ +
                         "' is not this server (use localhost, this machine's name or an IP "
                         "address of it)\n");
  EXPECT_EQ(dumps_, 0);
}

TEST_F(HttpServerTest, SameOriginAndOriginlessPostsRun) {
  EXPECT_EQ(status_line(post_dump("Host: 127.0.0.1:" + port_ + "\r\n")), "HTTP/1.1 202 Accepted");
  EXPECT_EQ(status_line(post_dump("Host: localhost:" + port_ +
                                  "\r\nOrigin: http://localhost:" + port_ + "\r\n")),
            "HTTP/1.1 202 Accepted");
  EXPECT_EQ(status_line(post_dump("")), "HTTP/1.1 202 Accepted");  // HTTP/1.0-style, no Host
  EXPECT_EQ(dumps_, 3);
  // Reads are never refused.
  EXPECT_EQ(status_line(exchange(server_->port(),
                                 "GET /healthz HTTP/1.1\r\nHost: evil.example\r\nOrigin: "
                                 "http://evil.example\r\n\r\n")),
            "HTTP/1.1 200 OK");
}

// A flood of idle connections (the probe: 400 under ulimit -n 256 made the
// supervisor run out of descriptors) is held to the cap: each newcomer beyond
// it replaces the longest-idle one, and /healthz is still answered during
// and after the flood.
TEST_F(HttpServerTest, AFloodOfIdleConnectionsIsHeldToTheCapAndHealthzIsAnswered) {
  const size_t cap = server_->connection_cap();
  ASSERT_GE(cap, 4u);
  ASSERT_LE(cap, 64u);
  std::vector<int> flood;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 400; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    flood.push_back(fd);
    if (i % 100 == 99) {  // during the flood
      const std::string r =
          exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      EXPECT_EQ(status_line(r), "HTTP/1.1 200 OK") << "after " << i + 1 << " connections";
    }
  }
  // The server has accepted them all by the time it answers this one (it
  // accepts in order on one thread); it holds no more than the cap.
  const std::string after =
      exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(status_line(after), "HTTP/1.1 200 OK");
  EXPECT_LE(server_->open_connections(), cap);
  for (int fd : flood) ::close(fd);
}

TEST(RequestGuard, HostRules) {
  const RequestGuard local("127.0.0.1", std::string("node7.cluster.local"));
  for (const char* host : {"127.0.0.1:18888", "localhost", "LOCALHOST:1", "[::1]:18888",
                           "127.0.0.2", "node7", "node7.cluster.local:18888"}) {
    EXPECT_EQ(local.refusal("POST", std::string_view(host), std::nullopt), "") << host;
  }
  for (const char* host : {"evil.example", "10.0.0.5:18888", "node7.evil.example", "", "[::1"}) {
    EXPECT_NE(local.refusal("POST", std::string_view(host), std::nullopt), "") << host;
  }
  // Listening on every interface: any address of the machine may be used.
  const RequestGuard any("0.0.0.0", std::string("node7"));
  EXPECT_EQ(any.refusal("POST", std::string_view("10.0.0.5:18888"), std::nullopt), "");
  EXPECT_NE(any.refusal("POST", std::string_view("evil.example"), std::nullopt), "");
  const RequestGuard v6("::", std::string("node7"));
  EXPECT_EQ(v6.refusal("POST", std::string_view("[fe80::1]:18888"), std::nullopt), "");
  const RequestGuard one("10.0.0.5", std::string("node7"));
  EXPECT_EQ(one.refusal("POST", std::string_view("10.0.0.5:18888"), std::nullopt), "");
  EXPECT_NE(one.refusal("POST", std::string_view("10.0.0.6:18888"), std::nullopt), "");
}

TEST(RequestGuard, OriginMustBeThisServer) {
  const RequestGuard g("127.0.0.1", std::string("node7"));
  EXPECT_EQ(g.refusal("POST", std::string_view("127.0.0.1:18888"),
                      std::string_view("http://127.0.0.1:18888")),
            "");
  EXPECT_NE(g.refusal("POST", std::string_view("127.0.0.1:18888"),
                      std::string_view("http://127.0.0.1:8080")),
            "");
  EXPECT_NE(g.refusal("POST", std::string_view("127.0.0.1:18888"),
                      std::string_view("https://127.0.0.1:18888")),
            "");
  EXPECT_NE(g.refusal("POST", std::nullopt, std::string_view("http://127.0.0.1:18888")), "");
  EXPECT_EQ(g.refusal("GET", std::string_view("evil.example"), std::string_view("http://x")), "");
  EXPECT_EQ(g.refusal("HEAD", std::string_view("evil.example"), std::nullopt), "");
}

}  // namespace
}  // namespace xpu_timer::supervisor
