// EtcdStore against a scripted stand-in for etcd's gateway on a loopback
// socket: the requests it sends (grant once, every key under the lease), how
// it recovers a lease etcd no longer knows, and the one line each failure
// gives (refused, no answer by the deadline, HTTP errors, malformed answers).
// The real etcd is in etcd_store_process_test.cc.
#include "supervisor/coordination/etcd_store.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/coordination/base64.h"
#include "tests/harness/etcd_server.h"

namespace xpu_timer::supervisor {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct Request {
  std::string path;
  std::string body;
};

// A listening socket on 127.0.0.1 and a thread that answers each
// connection's one request with what `answer(path, body)` returns (raw bytes,
// status line included), then closes it. Requests are recorded in order.
class FakeGateway {
 public:
  using Answer = std::function<std::string(const Request&)>;

  explicit FakeGateway(Answer answer) : answer_(std::move(answer)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 16) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
      return;
    }
    port_ = ntohs(addr.sin_port);
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeGateway() {
    if (thread_.joinable()) {
      const uint64_t one = 1;
      EXPECT_EQ(::write(stop_fd_, &one, sizeof(one)), 8);
      thread_.join();
    }
    if (stop_fd_ >= 0) ::close(stop_fd_);
    ::close(listen_fd_);
  }

  int port() const { return port_; }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // "grant put put ...": the last segment of each request's path.
  std::string paths() {
    std::string out;
    for (const Request& r : requests()) {
      out += (out.empty() ? "" : " ") + r.path.substr(r.path.rfind('/') + 1);
    }
    return out;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.clear();
  }

 private:
  void serve() {
    for (;;) {
      pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) continue;
      if (p[1].revents != 0) return;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      Request r;
      if (read_request(fd, &r)) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          requests_.push_back(r);
        }
        const std::string out = answer_(r);
        for (size_t sent = 0; sent < out.size();) {
          const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
          if (n <= 0) break;
          sent += static_cast<size_t>(n);
        }
      }
      ::close(fd);
    }
  }

  // Reads the head and a Content-Length body (5 s at most).
  static bool read_request(int fd, Request* r) {
    std::string raw;
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    char buf[4096];
    for (;;) {
      const size_t head_end = raw.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        const size_t cl = raw.find("Content-Length: ");
        const size_t length = cl == std::string::npos ? 0 : std::stoul(raw.substr(cl + 16));
        if (raw.size() >= head_end + 4 + length) {
          r->path = raw.substr(5, raw.find(' ', 5) - 5);  // "POST /v3/... HTTP/1.1"
          r->body = raw.substr(head_end + 4, length);
          return true;
        }
      }
      pollfd p{fd, POLLIN, 0};
      if (Clock::now() > deadline || ::poll(&p, 1, 100) < 0) return false;
      if (p.revents == 0) continue;
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      raw.append(buf, static_cast<size_t>(n));
    }
  }

  Answer answer_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Request> requests_;
};

std::string json_answer(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string chunked_answer(const std::string& body) {
  char size[16];
  snprintf(size, sizeof(size), "%zx", body.size());
  return std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") + size + "\r\n" +
         body + "\r\n0\r\n\r\n";
}

const char kOkHeader[] = R"({"header":{"revision":"3"}})";
const char kLeaseNotFound[] =
    R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested )"
    R"(lease not found","code":5})";

// A gateway that knows one lease at a time: grant gives 100, 101, ...; a
// put names a lease, and one that is not the current lease is refused as
// etcd refuses it. `expire()` forgets the current lease.
class LeaseKeepingGateway {
 public:
  LeaseKeepingGateway() : gateway_([this](const Request& r) { return answer(r); }) {}
  FakeGateway& gateway() { return gateway_; }
  void expire() {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = 0;
  }
  // The next `n` puts are answered 503, as etcd without a leader answers.
  void fail_next_puts(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_puts_ = n;
  }
  // The lease named by each put, in order, as "key@lease".
  std::vector<std::string> puts() {
    std::vector<std::string> out;
    for (const Request& r : gateway_.requests()) {
      if (r.path != "/v3/kv/put") continue;
      const size_t k = r.body.find("\"key\":\"") + 7;
      const size_t l = r.body.find("\"lease\":\"") + 9;
      std::string key;
      std::string error;
      EXPECT_TRUE(base64_decode(r.body.substr(k, r.body.find('"', k) - k), &key, &error));
      out.push_back(key + "@" + r.body.substr(l, r.body.find('"', l) - l));
    }
    return out;
  }

 private:
  std::string answer(const Request& r) {
    std::lock_guard<std::mutex> lock(mu_);
    if (r.path == "/v3/lease/grant") {
      current_ = next_++;
      return json_answer(200,
                         R"({"header":{},"ID":")" + std::to_string(current_) + R"(","TTL":"10"})");
    }
    const std::string current = "\"" + std::to_string(current_) + "\"";
    if (r.path == "/v3/lease/keepalive") {
      const bool known = current_ != 0 && r.body.find(current) != std::string::npos;
      return chunked_answer(std::string(R"({"result":{"header":{},"ID":"1")") +
                            (known ? R"(,"TTL":"10")" : "") + "}}\n");
    }
    if (r.path == "/v3/kv/put" && fail_puts_ > 0) {
      --fail_puts_;
      return json_answer(503, R"({"error":"x","message":"etcdserver: no leader","code":14})");
    }
    if (r.path == "/v3/kv/put") {
      const bool known = current_ != 0 && r.body.find("\"lease\":" + current) != std::string::npos;
      return known ? json_answer(200, kOkHeader) : json_answer(404, kLeaseNotFound);
    }
    return json_answer(200, kOkHeader);
  }

  std::mutex mu_;
  int64_t current_ = 0;
  int64_t next_ = 100;
  int fail_puts_ = 0;
  FakeGateway gateway_;  // last: its thread stops before the state above goes
};

EtcdStore store_at(int port, milliseconds timeout = milliseconds(5000)) {
  return EtcdStore(StoreEndpoint{"127.0.0.1", port}, 10, timeout);
}

TEST(EtcdStore, GrantsOneLeaseAndPutsEveryKeyUnderIt) {
  LeaseKeepingGateway etcd;
  EtcdStore store = store_at(etcd.gateway().port());
  EXPECT_EQ(store.lease_id(), 0);
  ASSERT_TRUE(store.put("job/n0", "a")) << store.error();
  ASSERT_TRUE(store.put("job/n1", "b")) << store.error();
  ASSERT_TRUE(store.keep_alive()) << store.error();
  EXPECT_EQ(etcd.gateway().paths(), "grant put put keepalive");
  EXPECT_EQ(etcd.gateway().requests()[0].body, R"({"ID":"0","TTL":"10"})");
  EXPECT_EQ(etcd.puts(), (std::vector<std::string>{"job/n0@100", "job/n1@100"}));
  EXPECT_EQ(store.lease_id(), 100);
  EXPECT_EQ(store.lease_grants(), 1);
  EXPECT_EQ(store.error(), "");
}

TEST(EtcdStore, AGoneLeaseIsRegrantedAndCarriesEveryKeyNotRemoved) {
  LeaseKeepingGateway etcd;
  EtcdStore store = store_at(etcd.gateway().port());
  ASSERT_TRUE(store.put("a", "1")) << store.error();
  ASSERT_TRUE(store.put("b", "2")) << store.error();
  ASSERT_TRUE(store.put("c", "3")) << store.error();
  ASSERT_TRUE(store.remove("b")) << store.error();
  ASSERT_TRUE(store.put("a", "1'")) << store.error();

  // Found gone by a put: this put and every other key go under a new lease.
  etcd.expire();
  etcd.gateway().clear();
  ASSERT_TRUE(store.put("d", "4")) << store.error();
  EXPECT_EQ(etcd.gateway().paths(), "put grant put put put");
  EXPECT_EQ(etcd.puts(), (std::vector<std::string>{"d@100", "a@101", "c@101", "d@101"}));
  EXPECT_NE(etcd.gateway().requests()[2].body.find(base64_encode("1'")), std::string::npos);

  // Found gone by a keep-alive (TTL 0 in the answer).
  etcd.expire();
  etcd.gateway().clear();
  ASSERT_TRUE(store.keep_alive()) << store.error();
  EXPECT_EQ(etcd.gateway().paths(), "keepalive grant put put put");
  EXPECT_EQ(etcd.puts(), (std::vector<std::string>{"a@102", "c@102", "d@102"}));
  EXPECT_EQ(store.lease_grants(), 3);
  EXPECT_EQ(store.error(), "");
}

TEST(EtcdStore, ARefusedConnectionFailsAtOnceAndTheNextCallRetries) {
  // A port nobody listens on: bound, never listened, closed after the call.
  int port = 0;
  const int fd = xpu_timer::testing::bind_loopback_port(&port);
  ASSERT_GE(fd, 0);
  EtcdStore store = store_at(port);
  const std::string at = "etcd 127.0.0.1:" + std::to_string(port) + ": ";
  const auto start = Clock::now();
  EXPECT_FALSE(store.put("k", "v"));
  EXPECT_EQ(store.error(), at + "/v3/lease/grant: cannot connect: Connection refused");
  EXPECT_FALSE(store.keep_alive());
  EXPECT_EQ(store.error(), at + "/v3/lease/grant: cannot connect: Connection refused");
  std::vector<KeyValue> kvs{{"stale", "x", 1}};
  EXPECT_FALSE(store.get_prefix("", &kvs, nullptr));
  EXPECT_TRUE(kvs.empty());
  EXPECT_EQ(store.error(), at + "/v3/kv/range: cannot connect: Connection refused");
  EXPECT_FALSE(store.remove("k"));
  EXPECT_EQ(store.error(), at + "/v3/kv/deleterange: cannot connect: Connection refused");
  // A refusal is not a timeout: far below the 5 s call timeout.
  EXPECT_LT(Clock::now() - start, milliseconds(4000));
  ::close(fd);
}

TEST(EtcdStore, NoAnswerFailsAtTheDeadline) {
  // Listening, never accepting: the kernel completes the connection and
  // takes the request, and no answer ever comes.
  int port = 0;
  const int fd = xpu_timer::testing::bind_loopback_port(&port);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  const milliseconds timeout(300);
  EtcdStore store = store_at(port, timeout);
  const auto start = Clock::now();
  std::vector<KeyValue> kvs;
  EXPECT_FALSE(store.get_prefix("job/", &kvs, nullptr));
  const auto took = Clock::now() - start;
  EXPECT_EQ(store.error(), "etcd 127.0.0.1:" + std::to_string(port) +
                               ": /v3/kv/range: timed out waiting for the answer (call timeout "
                               "300 ms)");
  // The wait ends at the deadline, not before; after it only by how late
  // this thread is scheduled (generous for a loaded machine).
  EXPECT_GE(took, timeout);
  EXPECT_LT(took, timeout + milliseconds(3000));
  ::close(fd);
}

TEST(EtcdStore, AHostThatDoesNotResolveFailsByTheDeadline) {
  // ".invalid" never resolves (RFC 2606); without a resolver answering in
  // time the lookup times out instead. Either way: one line, by the deadline.
  const milliseconds timeout(500);
  EtcdStore store(StoreEndpoint{"no-such-host.invalid", 2379}, 10, timeout);
  const auto start = Clock::now();
  std::vector<KeyValue> kvs;
  EXPECT_FALSE(store.get_prefix("", &kvs, nullptr));
  EXPECT_LT(Clock::now() - start, timeout + milliseconds(3000));
  const std::string at = "etcd no-such-host.invalid:2379: /v3/kv/range: ";
  EXPECT_TRUE(store.error().rfind(at + "cannot resolve no-such-host.invalid: ", 0) == 0 ||
              store.error() == at + "timed out resolving no-such-host.invalid (the lookup goes on "
                                    "for the next call) (call timeout 500 ms)")
      << store.error();
}

TEST(EtcdStore, BadAnswersGiveOneLineAndTheStoreStaysUsable) {
  std::mutex mu;
  std::string next;  // the raw answer to the next request
  FakeGateway gateway([&](const Request&) {
    std::lock_guard<std::mutex> lock(mu);
    return next;
  });
  const auto answer_with = [&](const std::string& raw) {
    std::lock_guard<std::mutex> lock(mu);
    next = raw;
  };
  EtcdStore store = store_at(gateway.port());
  const std::string at = "etcd 127.0.0.1:" + std::to_string(gateway.port()) + ": /v3/kv/range: ";
  std::vector<KeyValue> kvs;
  const std::pair<std::string, std::string> cases[] = {
      {"", "malformed answer: connection closed without an answer"},
      {"SSH-2.0-x\r\n\r\n", "malformed answer: not an HTTP/1.x status line: \"SSH-2.0-x\""},
      {"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{}",
       "malformed answer: connection closed after 41 bytes, before the end of the answer's body"},
      {json_answer(500, "internal"), "HTTP 500: \"internal\""},
      {json_answer(400, R"({"error":"bad","message":"etcdserver: bad range","code":3})"),
       "HTTP 400: etcdserver: bad range"},
      {json_answer(200, R"({"header":{"revision":"3"},"kvs":[{"key":"%"}]})"),
       "kvs[0]: \"key\": base64 of 1 characters (not a multiple of 4)"},
  };
  for (const auto& [raw, message] : cases) {
    answer_with(raw);
    EXPECT_FALSE(store.get_prefix("", &kvs, nullptr));
    EXPECT_EQ(store.error(), at + message);
  }
  answer_with(json_answer(200, "{not json"));
  EXPECT_FALSE(store.get_prefix("", &kvs, nullptr));
  EXPECT_EQ(store.error().rfind(at + "not JSON ([json.exception.parse_error.101]", 0), 0u)
      << store.error();

  answer_with(
      chunked_answer(R"({"header":{"revision":"9"},"kvs":[{"key":"YQ==","value":"Yg=="}]})"));
  int64_t revision = 0;
  ASSERT_TRUE(store.get_prefix("", &kvs, &revision)) << store.error();
  ASSERT_EQ(kvs.size(), 1u);
  EXPECT_EQ(kvs[0].key, "a");
  EXPECT_EQ(kvs[0].value, "b");
  EXPECT_EQ(revision, 9);

  // A grant that fails leaves no lease; a grant refused by etcd says so.
  answer_with(json_answer(200, R"({"header":{},"error":"etcdserver: too many leases"})"));
  EXPECT_FALSE(store.put("k", "v"));
  EXPECT_EQ(store.error(),
            "etcd 127.0.0.1:" + std::to_string(gateway.port()) +
                ": /v3/lease/grant: lease grant refused: etcdserver: too many leases");
  EXPECT_EQ(store.lease_id(), 0);
  EXPECT_FALSE(store.put("", "v"));
  EXPECT_EQ(store.error(),
            "etcd 127.0.0.1:" + std::to_string(gateway.port()) + ": /v3/kv/put: empty key");
}

TEST(EtcdStore, AFailedRewriteIsFinishedByTheNextCall) {
  LeaseKeepingGateway etcd;
  EtcdStore store = store_at(etcd.gateway().port());
  ASSERT_TRUE(store.put("a", "1")) << store.error();
  ASSERT_TRUE(store.put("b", "2")) << store.error();
  // The lease is gone and etcd fails the first rewrite under the new one.
  etcd.expire();
  etcd.fail_next_puts(1);
  etcd.gateway().clear();
  EXPECT_FALSE(store.keep_alive());
  EXPECT_EQ(store.error(), "etcd 127.0.0.1:" + std::to_string(etcd.gateway().port()) +
                               ": /v3/kv/put: HTTP 503: etcdserver: no leader");
  EXPECT_EQ(store.lease_id(), 101);
  // The next call writes every key under lease 101, not just its own.
  ASSERT_TRUE(store.keep_alive()) << store.error();
  EXPECT_EQ(etcd.gateway().paths(), "keepalive grant put keepalive put put");
  EXPECT_EQ(etcd.puts(), (std::vector<std::string>{"a@101", "a@101", "b@101"}));
  etcd.gateway().clear();
  ASSERT_TRUE(store.keep_alive()) << store.error();
  EXPECT_EQ(etcd.gateway().paths(), "keepalive");
}

}  // namespace
}  // namespace xpu_timer::supervisor
