#include "supervisor/coordination/http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

#include "supervisor/coordination/http_response_parser.h"
#include "common/unique_fd.h"

namespace xpu_timer::supervisor {
namespace {

// Milliseconds left until `deadline`, rounded up so that a wait never ends
// before it; 0 once it has passed.
int remaining_ms(HttpClient::Deadline deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, 1 << 30));
}

// Waits for `events` on `fd` until the deadline: > 0 ready, 0 timed out, < 0 errno.
int wait_fd(int fd, short events, HttpClient::Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n >= 0) return n;
    if (errno != EINTR) return -errno;
  }
}

std::string errno_text(int err) { return strerror(err); }

bool send_all(int fd, const std::string& data, HttpClient::Deadline deadline, std::string* error) {
  for (size_t sent = 0; sent < data.size();) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      *error = "cannot send the request: " + errno_text(errno);
      return false;
    }
    const int ready = wait_fd(fd, POLLOUT, deadline);
    if (ready == 0) {
      *error = "timed out sending the request";
      return false;
    }
    if (ready < 0) {
      *error = "cannot send the request: " + errno_text(-ready);
      return false;
    }
  }
  return true;
}

// > 0 bytes read, 0 at the end of the stream, -1 with `error`.
long recv_some(int fd, char* buf, size_t size, HttpClient::Deadline deadline, std::string* error) {
  for (;;) {
    const ssize_t n = ::recv(fd, buf, size, 0);
    if (n >= 0) return static_cast<long>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *error = "cannot read the answer: " + errno_text(errno);
      return -1;
    }
    const int ready = wait_fd(fd, POLLIN, deadline);
    if (ready == 0) {
      *error = "timed out waiting for the answer";
      return -1;
    }
    if (ready < 0) {
      *error = "cannot read the answer: " + errno_text(-ready);
      return -1;
    }
  }
}

}  // namespace

// One lookup, shared by the client and the thread running getaddrinfo
// (which may outlive the client: whichever lets go last frees it).
struct HttpClient::Lookup {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // under mu, as the two below
  int status = 0;     // getaddrinfo's result
  std::vector<Address> addresses;
};

HttpClient::HttpClient(std::string host, int port, std::shared_ptr<const TlsContext> tls)
    : host_(std::move(host)), port_(port), tls_(std::move(tls)) {
  const bool ipv6 = host_.find(':') != std::string::npos;
  host_header_ = (ipv6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(port_);
  // A literal address needs no lookup.
  Address a{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.addr);
  if (::inet_pton(AF_INET, host_.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port_));
    a.len = sizeof(sockaddr_in);
    addresses_.push_back(a);
  } else if (::inet_pton(AF_INET6, host_.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port_));
    a.len = sizeof(sockaddr_in6);
    addresses_.push_back(a);
  }
  literal_ = !addresses_.empty();
}

bool HttpClient::resolve(Deadline deadline, std::string* error) {
  if (!addresses_.empty()) return true;
  if (!lookup_) {
    auto lookup = std::make_shared<Lookup>();
    try {
      std::thread([lookup, host = host_, service = std::to_string(port_)] {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        // No AI_ADDRCONFIG: it drops 127.0.0.1 where lo is the only interface.
        hints.ai_flags = AI_NUMERICSERV;
        addrinfo* result = nullptr;
        const int status = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &result);
        std::vector<Address> found;
        for (const addrinfo* ai = status == 0 ? result : nullptr; ai != nullptr; ai = ai->ai_next) {
          if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
          Address a{};
          memcpy(&a.addr, ai->ai_addr, ai->ai_addrlen);
          a.len = ai->ai_addrlen;
          found.push_back(a);
        }
        if (result != nullptr) ::freeaddrinfo(result);
        std::lock_guard<std::mutex> lock(lookup->mu);
        lookup->status = status;
        lookup->addresses = std::move(found);
        lookup->done = true;
        lookup->cv.notify_all();
      }).detach();
    } catch (const std::system_error& e) {
      *error = "cannot resolve " + host_ + ": cannot start a thread: " + e.what();
      return false;
    }
    lookup_ = std::move(lookup);
  }
  std::unique_lock<std::mutex> lock(lookup_->mu);
  if (!lookup_->cv.wait_until(lock, deadline, [&] { return lookup_->done; })) {
    *error = "timed out resolving " + host_ + " (the lookup goes on for the next call)";
    return false;
  }
  const int status = lookup_->status;
  addresses_ = std::move(lookup_->addresses);
  lock.unlock();
  lookup_.reset();
  if (status != 0) {
    *error = "cannot resolve " + host_ + ": " + ::gai_strerror(status);
    return false;
  }
  if (addresses_.empty()) {
    *error = "cannot resolve " + host_ + ": no address";
    return false;
  }
  return true;
}

// Connects to the first address that accepts, trying them in order; returns
// the fd, or -1 with `error` naming the last failure.
int HttpClient::connect_any(Deadline deadline, std::string* error) {
  for (const Address& a : addresses_) {
    UniqueFd fd(::socket(a.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      *error = "socket: " + errno_text(errno);
      continue;
    }
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0) {
      return fd.release();
    }
    if (errno != EINPROGRESS && errno != EINTR) {  // EINTR: the connect goes on
      *error = "cannot connect: " + errno_text(errno);
      continue;
    }
    const int ready = wait_fd(fd.get(), POLLOUT, deadline);
    if (ready == 0) {
      *error = "timed out connecting";
      return -1;  // no time left for the other addresses either
    }
    int so_error = ready < 0 ? -ready : 0;
    socklen_t len = sizeof(so_error);
    if (ready > 0 && ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) {
      so_error = errno;
    }
    if (so_error == 0) return fd.release();
    *error = "cannot connect: " + errno_text(so_error);
  }
  // Every address failed: look the name up again next time (it may have moved).
  if (!literal_) addresses_.clear();
  return -1;
}

bool HttpClient::post(const std::string& path, const std::string& body, Deadline deadline,
                      HttpResponse* response, std::string* error,
                      const std::string& authorization) {
  if (!resolve(deadline, error)) return false;
  UniqueFd fd(connect_any(deadline, error));
  if (!fd.valid()) return false;

  std::string request = "POST " + path + " HTTP/1.1\r\nHost: " + host_header_ +
                        "\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n";
  if (!authorization.empty()) request += "Authorization: " + authorization + "\r\n";
  request += "Connection: close\r\n\r\n" + body;
  TlsStream tls;
  if (tls_ != nullptr) {
    if (!tls.connect(*tls_, fd.get(), host_, deadline, error)) return false;
    if (!tls.write_all(request, deadline, error)) return false;
  } else if (!send_all(fd.get(), request, deadline, error)) {
    return false;
  }

  HttpResponseParser parser;
  char buf[16384];
  while (parser.state() == HttpResponseParser::State::kNeedMore) {
    const long n = tls_ != nullptr ? tls.read(buf, sizeof(buf), deadline, error)
                                   : recv_some(fd.get(), buf, sizeof(buf), deadline, error);
    if (n < 0) return false;
    if (n == 0) {
      parser.finish();
      break;
    }
    parser.feed(buf, static_cast<size_t>(n));
  }
  if (parser.state() == HttpResponseParser::State::kError) {
    *error = "malformed answer: " + parser.error();
    return false;
  }
  response->status = parser.status();
  response->body = parser.body();
  return true;
}

}  // namespace xpu_timer::supervisor
