#include "supervisor/rank_link_server.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>

#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {
namespace {

// Far more than the ranks of one node; bounds what a runaway client can hold.
constexpr size_t kMaxConnections = 4096;

}  // namespace

class RankLinkServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(RankLinkServer* server, int fd, uint64_t id)
      : server_(server), alive_(server->alive_), socket_(server->io_, fd), id_(id) {}

  void read_next() {
    auto self = shared_from_this();
    socket_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                       [self](const boost::system::error_code& ec) { self->on_readable(ec); });
  }

 private:
  void on_readable(const boost::system::error_code& ec) {
    if (ec || !*alive_) return;  // cancelled: the server is closing
    // MSG_TRUNC makes recv report the packet's real length, so an oversize
    // packet is seen as such instead of silently cut.
    const ssize_t n =
        recv(socket_.native_handle(), buffer_.data(), buffer_.size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      read_next();
      return;
    }
    if (n <= 0) {
      close(n < 0 ? strerror(errno) : nullptr);
      return;
    }
    if (static_cast<size_t>(n) > buffer_.size()) {
      SUP_LOG_WARN("rank link %llu: dropped: message of %zd bytes is too large",
                   static_cast<unsigned long long>(id_), n);
      close(nullptr);
      return;
    }
    std::string error;
    auto reg = parse_register_message(buffer_.data(), static_cast<size_t>(n), &error);
    if (!reg) {
      SUP_LOG_WARN("rank link %llu: dropped: %s", static_cast<unsigned long long>(id_),
                   error.c_str());
      close(nullptr);
      return;
    }
    if (!server_->on_register_(id_, *reg)) {
      close(nullptr);
      return;
    }
    read_next();
  }

  void close(const char* why) {
    if (why != nullptr) {
      SUP_LOG_DEBUG("rank link %llu closed: %s", static_cast<unsigned long long>(id_), why);
    }
    boost::system::error_code ignored;
    socket_.close(ignored);
    if (*alive_) {
      --server_->open_connections_;
      server_->on_disconnect_(id_);
    }
  }

  RankLinkServer* server_;
  std::shared_ptr<bool> alive_;
  boost::asio::posix::stream_descriptor socket_;
  uint64_t id_;
  std::array<unsigned char, 2048> buffer_{};
};

RankLinkServer::RankLinkServer(boost::asio::io_context& io, RegisterCallback on_register,
                               DisconnectCallback on_disconnect)
    : io_(io),
      acceptor_(io),
      retry_timer_(io),
      on_register_(std::move(on_register)),
      on_disconnect_(std::move(on_disconnect)) {}

RankLinkServer::~RankLinkServer() { close(); }

bool RankLinkServer::listen(const std::string& path, std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    *error = "socket path too long: " + path;
    return false;
  }
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = std::string("socket(AF_UNIX, SOCK_SEQPACKET) failed: ") + strerror(errno);
    return false;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 256) != 0) {
    *error = "cannot listen on " + path + ": " + strerror(errno);
    ::close(fd);
    return false;
  }
  acceptor_.assign(fd);
  accept_next();
  return true;
}

void RankLinkServer::close() {
  *alive_ = false;
  boost::system::error_code ignored;
  retry_timer_.cancel();
  acceptor_.close(ignored);
}

void RankLinkServer::accept_next() {
  auto alive = alive_;
  acceptor_.async_wait(
      boost::asio::posix::descriptor_base::wait_read,
      [this, alive](const boost::system::error_code& ec) {
        if (ec || !*alive) return;
        for (;;) {
          const int fd =
              accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
          if (fd < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            SUP_LOG_WARN("accept on the rank socket failed: %s; retrying in 1 s", strerror(errno));
            retry_timer_.expires_after(std::chrono::seconds(1));
            retry_timer_.async_wait([this, alive](const boost::system::error_code& tec) {
              if (!tec && *alive) accept_next();
            });
            return;
          }
          if (open_connections_ >= kMaxConnections) {
            SUP_LOG_WARN("too many rank connections (%zu): refusing one", open_connections_);
            ::close(fd);
            continue;
          }
          ++open_connections_;
          std::make_shared<Connection>(this, fd, next_id_++)->read_next();
        }
        accept_next();
      });
}

}  // namespace xpu_timer::supervisor
