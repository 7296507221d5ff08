#include "supervisor/http_server.h"

#include <fcntl.h>
#include <signal.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>

#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

constexpr auto kReadTimeout = std::chrono::seconds(10);
constexpr auto kWriteTimeout = std::chrono::seconds(60);
constexpr uint32_t kHeaderLimit = 8 * 1024;
constexpr uint64_t kBodyLimit = 64 * 1024;

// One client connection; lives as long as an operation of it is pending.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpHandlers& handlers)
      : stream_(std::move(socket)), handlers_(handlers) {}

  void read_request() {
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
    if (ec) {  // EOF, timeout, or a request the parser refused: just close
      close();
      return;
    }
    const auto& req = parser_->get();
    const HttpAnswer answer =
        route_request(handlers_, std::string(req.method_string()), std::string(req.target()));
    response_ = {};
    response_.version(req.version());
    response_.result(static_cast<unsigned>(answer.status));
    response_.set(http::field::server, "xpu_timer_supervisor");
    response_.set(http::field::content_type, answer.content_type);
    response_.keep_alive(req.keep_alive());
    if (req.method() == http::verb::head) {
      response_.content_length(answer.body.size());
    } else {
      response_.body() = answer.body;
      response_.prepare_payload();
    }
    stream_.expires_after(kWriteTimeout);
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code wec, size_t) {
                        if (wec || !self->response_.keep_alive()) {
                          self->close();
                          return;
                        }
                        self->read_request();
                      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  const HttpHandlers& handlers_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
};

}  // namespace

struct HttpServer::Impl {
  explicit Impl(HttpHandlers h) : handlers(std::move(h)), acceptor(io) {}

  void accept_next() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
        std::make_shared<Session>(std::move(socket), handlers)->read_request();
      } else {
        SUP_LOG_WARN("HTTP accept failed: %s", ec.message().c_str());
        // EMFILE and the like: back off instead of spinning.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      accept_next();
    });
  }

  HttpHandlers handlers;
  asio::io_context io{1};
  tcp::acceptor acceptor;
};

HttpServer::HttpServer(HttpHandlers handlers)
    : impl_(std::make_unique<Impl>(std::move(handlers))) {}

HttpServer::~HttpServer() { stop(); }

bool HttpServer::start(const std::string& host, int port, std::string* error) {
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
    *error = "cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message();
    beast::error_code ignored;
    acceptor.close(ignored);
    return false;
  }
  port_ = acceptor.local_endpoint().port();
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
  return true;
}

void HttpServer::stop() {
  impl_->io.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace xpu_timer::supervisor
