#include "supervisor/http/http_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <list>
#include <map>
#include <optional>

#include "supervisor/http/http_request_guard.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

constexpr auto kReadTimeout = std::chrono::seconds(10);
constexpr auto kWriteTimeout = std::chrono::seconds(60);
constexpr auto kDrainTimeout = std::chrono::seconds(2);
constexpr uint32_t kHeaderLimit = 8 * 1024;
constexpr uint64_t kBodyLimit = 64 * 1024;
// At most this many connections are open at once (fewer when the descriptor
// limit is low: a quarter of it), and one client address holds at most three
// quarters of them; a newcomer beyond that replaces the connection that has
// waited longest without a whole request. So a flood of idle connections
// neither exhausts the supervisor's descriptors nor keeps /healthz out.
constexpr size_t kMaxConnections = 64;

std::optional<std::string_view> header(const http::request<http::string_body>& req,
                                       http::field field) {
  const auto it = req.find(field);
  if (it == req.end()) return std::nullopt;
  return std::string_view(it->value().data(), it->value().size());
}

// The answer to a request the parser refused, or nullopt when there is nobody
// to answer (the client went away or was too slow: just close).
std::optional<HttpAnswer> parse_error_answer(beast::error_code ec) {
  if (ec.category() != http::make_error_code(http::error::end_of_stream).category()) {
    return std::nullopt;  // a socket error or the read timeout
  }
  const auto e = static_cast<http::error>(ec.value());
  if (e == http::error::end_of_stream || e == http::error::partial_message) return std::nullopt;
  constexpr const char* kText = "text/plain; charset=utf-8";
  if (e == http::error::header_limit) {
    return HttpAnswer{
        431, kText,
        "request header fields too large (limit " + std::to_string(kHeaderLimit) + " bytes)\n"};
  }
  if (e == http::error::body_limit) {
    return HttpAnswer{413, kText,
                      "request body too large (limit " + std::to_string(kBodyLimit) + " bytes)\n"};
  }
  return HttpAnswer{400, kText, "bad request: " + ec.message() + "\n"};
}

class Session;

// The open connections, for the cap (docs/architecture.md "The processes"):
// the HTTP thread only.
struct Connections {
  std::atomic<size_t> open{0};  // also read by HttpServer::open_connections()
  std::map<std::string, size_t> per_peer;
  std::list<std::weak_ptr<Session>> oldest_first;
};

// One client connection; lives as long as an operation of it is pending.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpHandlers& handlers, const RequestGuard& guard,
          std::shared_ptr<Connections> connections, std::string peer)
      : stream_(std::move(socket)),
        handlers_(handlers),
        guard_(guard),
        connections_(std::move(connections)),
        peer_(std::move(peer)) {
    ++connections_->open;
    ++connections_->per_peer[peer_];
  }
  ~Session() { uncount(); }

  const std::string& peer() const { return peer_; }
  // Waiting for (the rest of) a request: a client that holds a connection
  // without asking anything, whom a newcomer may replace.
  bool idle() const { return waiting_; }
  // Closes it for a newcomer; it no longer counts from now (its pending read
  // ends with an error and the session goes).
  void evict() {
    uncount();
    close();
  }

  void read_request() {
    waiting_ = true;
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kReadTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

 private:
  void on_read(beast::error_code ec) {
    waiting_ = false;
    if (ec) {
      // A request the parser refused gets its status and the reason, then
      // the connection closes: what follows in the stream cannot be framed.
      if (const std::optional<HttpAnswer> answer = parse_error_answer(ec)) {
        refused_ = true;
        respond(*answer, 11, /*keep_alive=*/false, /*head=*/false);
      } else {
        close();
      }
      return;
    }
    const auto& req = parser_->get();
    const std::string method(req.method_string());
    const std::string refused =
        guard_.refusal(method, header(req, http::field::host), header(req, http::field::origin));
    const HttpAnswer answer =
        refused.empty()
            ? route_request(handlers_, method, std::string(req.target()), req.body(), peer_)
            : HttpAnswer{403, "text/plain; charset=utf-8", refused + "\n"};
    respond(answer, req.version(), req.keep_alive(), req.method() == http::verb::head);
  }

  void respond(const HttpAnswer& answer, unsigned version, bool keep_alive, bool head) {
    keep_alive_ = keep_alive;
    if (answer.file && !head) {
      // A dump file, streamed: Beast reads it in small pieces as the socket
      // takes them. The write may last a minute more per MiB/s of the file.
      beast::file_posix file;
      file.native_handle(answer.file->release());
      http::file_body::value_type body;
      beast::error_code ec;
      body.reset(std::move(file), ec);
      if (!ec) {
        file_response_.emplace();
        fill_header(&*file_response_, answer, version);
        file_response_->body() = std::move(body);
        file_response_->prepare_payload();
        stream_.expires_after(kWriteTimeout + std::chrono::seconds(answer.file_bytes >> 20));
        http::async_write(
            stream_, *file_response_,
            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_written(ec); });
        return;
      }
      respond(HttpAnswer{500, "text/plain; charset=utf-8",
                         "cannot read the file: " + ec.message() + "\n"},
              version, keep_alive, head);
      return;
    }
    response_ = {};
    fill_header(&response_, answer, version);
    if (head) {
      response_.content_length(answer.file ? answer.file_bytes : answer.body.size());
    } else {
      response_.body() = answer.body;
      response_.prepare_payload();
    }
    stream_.expires_after(kWriteTimeout);
    http::async_write(
        stream_, response_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_written(ec); });
  }

  template <typename Response>
  void fill_header(Response* response, const HttpAnswer& answer, unsigned version) const {
    response->version(version);
    response->result(static_cast<unsigned>(answer.status));
    response->set(http::field::server, "xpu_timer_supervisor");
    response->set(http::field::content_type, answer.content_type);
    for (const auto& [name, value] : answer.headers) response->set(name, value);
    response->keep_alive(keep_alive_);
  }

  void on_written(beast::error_code ec) {
    file_response_.reset();  // closes the file
    if (!ec && refused_) {
      drain_and_close();
      return;
    }
    if (ec || !keep_alive_) {
      close();
      return;
    }
    read_request();
  }

  // Closing a socket with unread input makes the kernel send a reset, which
  // can destroy our answer before the client reads it. So after answering a
  // refused request: stop sending, discard what still arrives until the client
  // closes (or kDrainTimeout), then close.
  void drain_and_close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kDrainTimeout);
    stream_.async_read_some(asio::buffer(drain_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) {
                                self->close();
                              } else {
                                self->drain_and_close();
                              }
                            });
  }

  void uncount() {
    if (!counted_) return;
    counted_ = false;
    --connections_->open;
    if (--connections_->per_peer[peer_] == 0) connections_->per_peer.erase(peer_);
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  const HttpHandlers& handlers_;
  const RequestGuard& guard_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  std::optional<http::response<http::file_body>> file_response_;  // a dump file being sent
  bool keep_alive_ = false;                                       // of the answer being written
  bool refused_ = false;  // the parser refused the request: drain, then close
  bool waiting_ = false;  // in read_request(), no whole request yet
  bool counted_ = true;   // in Connections (until evicted or destroyed)
  std::shared_ptr<Connections> connections_;
  std::string peer_;
  char drain_[4096];
};

}  // namespace

struct HttpServer::Impl {
  explicit Impl(HttpHandlers h) : handlers(std::move(h)), acceptor(io) {}

  void accept_next() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
        beast::error_code peer_ec;
        const auto remote = socket.remote_endpoint(peer_ec);
        const std::string peer = peer_ec ? std::string("?") : remote.address().to_string();
        if (make_room(peer)) {
          auto session = std::make_shared<Session>(std::move(socket), handlers, *guard,
                                                   connections, peer);
          connections->oldest_first.push_back(session);
          session->read_request();
        } else {
          if (!refuse_logged) {
            refuse_logged = true;
            SUP_LOG_WARN("HTTP: %zu connections open, none idle: refusing new ones until one ends",
                         connections->open.load());
          }
          socket.close(peer_ec);
        }
      } else {
        SUP_LOG_WARN("HTTP accept failed: %s", ec.message().c_str());
        // EMFILE and the like: back off instead of spinning.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      accept_next();
    });
  }

  // Room for a connection from `peer`: under the caps, or made by closing
  // the longest-idle connection (of `peer` itself when it holds its share).
  // False when every connection is busy with a request.
  bool make_room(const std::string& peer) {
    auto& list = connections->oldest_first;
    for (auto it = list.begin(); it != list.end();) it = it->expired() ? list.erase(it) : ++it;
    const auto mine = connections->per_peer.find(peer);
    const bool peer_full = mine != connections->per_peer.end() && mine->second >= per_peer_cap;
    if (!peer_full && connections->open < cap) return true;
    for (auto it = list.begin(); it != list.end(); ++it) {
      const std::shared_ptr<Session> s = it->lock();
      if (!s || !s->idle() || (peer_full && s->peer() != peer)) continue;
      s->evict();  // its pending read ends; the session goes with it
      list.erase(it);
      ++evicted;
      return true;
    }
    return false;
  }

  HttpHandlers handlers;
  std::optional<RequestGuard> guard;  // set by start(), before the first accept
  std::shared_ptr<Connections> connections = std::make_shared<Connections>();
  size_t cap = kMaxConnections;
  size_t per_peer_cap = kMaxConnections * 3 / 4;
  uint64_t evicted = 0;
  bool refuse_logged = false;
  asio::io_context io{1};
  tcp::acceptor acceptor;
};

HttpServer::HttpServer(HttpHandlers handlers)
    : impl_(std::make_unique<Impl>(std::move(handlers))) {}

HttpServer::~HttpServer() { stop(); }

bool HttpServer::start(const std::string& host, int port, std::string* error) {
  if (!listen(host, port, error)) return false;
  serve();
  return true;
}

bool HttpServer::listen(const std::string& host, int port, std::string* error) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) {
    *error = "--host '" + host + "' is not an IP address: " + ec.message();
    return false;
  }
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  tcp::acceptor& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) ::fcntl(acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    address_in_use_ = ec == asio::error::address_in_use;
    *error = "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message();
    beast::error_code ignored;
    acceptor.close(ignored);
    return false;
  }
  port_ = acceptor.local_endpoint().port();
  struct rlimit files {};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    impl_->cap = std::max<size_t>(4, std::min<size_t>(kMaxConnections, files.rlim_cur / 4));
    impl_->per_peer_cap = std::max<size_t>(2, impl_->cap * 3 / 4);
  }
  impl_->guard.emplace(host);
  return true;
}

void HttpServer::serve() {
  impl_->accept_next();
  // The server's thread must not take the process's signals: the asio
  // signal_set of the main io_context handles them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  thread_ = std::thread([this] {
    try {
      impl_->io.run();
    } catch (const std::exception& e) {
      SUP_LOG_ERROR("HTTP server stopped: %s", e.what());
    }
  });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

size_t HttpServer::open_connections() const { return impl_->connections->open.load(); }

size_t HttpServer::connection_cap() const { return impl_->cap; }

void HttpServer::stop() {
  impl_->io.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace xpu_timer::supervisor
