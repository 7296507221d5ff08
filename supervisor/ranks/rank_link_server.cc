#include "supervisor/ranks/rank_link_server.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "common/rank_messages.h"
#include "common/unique_fd.h"
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

  void drain() {
    while (!closed_ && read_one() == ReadResult::kMore) {
    }
  }

 private:
  enum class ReadResult { kMore, kWouldBlock, kClosed };

  void on_readable(const boost::system::error_code& ec) {
    if (ec || !*alive_ || closed_) return;  // cancelled: the server is closing
    ReadResult r;
    while ((r = read_one()) == ReadResult::kMore) {
    }
    if (r == ReadResult::kWouldBlock) read_next();
  }

  ReadResult read_one() {
    std::vector<unsigned char>& buffer = server_->buffer_;
    // MSG_TRUNC makes recv report the packet's real length, so an oversize
    // packet is seen as such instead of silently cut.
    // A crash report may carry a descriptor (proto::kCrashFlagAwaitsRelease);
    // any descriptor a message carries is ours to close, whatever it is.
    iovec iov{buffer.data(), buffer.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    msghdr h{};
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = control;
    h.msg_controllen = sizeof(control);
    const ssize_t n =
        recvmsg(socket_.native_handle(), &h, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
    UniqueFd passed;  // the first descriptor received; the others are closed at once
    for (cmsghdr* c = n > 0 ? CMSG_FIRSTHDR(&h) : nullptr; c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        if (!passed.valid()) {
          passed.reset(fd);
        } else {
          ::close(fd);
        }
      }
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return ReadResult::kWouldBlock;
    }
    if (n <= 0) {
      close(n < 0 ? strerror(errno) : nullptr);
      return ReadResult::kClosed;
    }
    if (static_cast<size_t>(n) > buffer.size()) {
      return drop("message of " + std::to_string(n) + " bytes is too large");
    }
    std::string error;
    const std::optional<proto::MsgType> type =
        proto::decode_message(buffer.data(), static_cast<size_t>(n), &error);
    if (!type) return drop(error);
    switch (*type) {
      case proto::MsgType::kRegister: {
        auto reg = parse_register_message(buffer.data(), static_cast<size_t>(n), &error);
        if (!reg) return drop(error);
        if (!server_->on_register_(id_, *reg)) {
          close(nullptr);
          return ReadResult::kClosed;
        }
        return ReadResult::kMore;
      }
      case proto::MsgType::kCrashReport: {
        auto report = parse_crash_report(buffer.data(), static_cast<size_t>(n), &error);
        if (!report) return drop(error);
        if (!report->awaits_release) passed.reset();
        if (server_->on_crash_) server_->on_crash_(std::move(*report), std::move(passed));
        return ReadResult::kMore;
      }
      case proto::MsgType::kPythonException: {
        auto report = parse_python_exception(buffer.data(), static_cast<size_t>(n), &error);
        if (!report) return drop(error);
        if (server_->on_exception_) server_->on_exception_(std::move(*report));
        return ReadResult::kMore;
      }
    }
    return drop("unknown message type " + std::to_string(static_cast<unsigned>(*type)));
  }

  ReadResult drop(const std::string& why) {
    SUP_LOG_WARN("rank link %llu: dropped: %s", static_cast<unsigned long long>(id_), why.c_str());
    close(nullptr);
    return ReadResult::kClosed;
  }

  void close(const char* why) {
    if (closed_) return;
    closed_ = true;
    if (why != nullptr) {
      SUP_LOG_DEBUG("rank link %llu closed: %s", static_cast<unsigned long long>(id_), why);
    }
    boost::system::error_code ignored;
    socket_.close(ignored);
    if (*alive_) {
      --server_->open_connections_;
      server_->connections_.erase(id_);
      server_->on_disconnect_(id_);
    }
  }

  RankLinkServer* server_;
  std::shared_ptr<bool> alive_;
  boost::asio::posix::stream_descriptor socket_;
  uint64_t id_;
  bool closed_ = false;
};

RankLinkServer::RankLinkServer(boost::asio::io_context& io, RegisterCallback on_register,
                               DisconnectCallback on_disconnect)
    : io_(io),
      acceptor_(io),
      retry_timer_(io),
      on_register_(std::move(on_register)),
      on_disconnect_(std::move(on_disconnect)),
      buffer_(proto::kMaxMessageBytes) {}

RankLinkServer::~RankLinkServer() { close(); }

bool RankLinkServer::listen(const std::string& path, std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    *error = "socket path too long: " + path;
    return false;
  }
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) {
    *error = std::string("socket(AF_UNIX, SOCK_SEQPACKET) failed: ") + strerror(errno);
    return false;
  }
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd.get(), 256) != 0) {
    *error = "cannot listen on " + path + ": " + strerror(errno);
    return false;
  }
  acceptor_.assign(fd.release());  // the acceptor owns it now
  accept_next();
  return true;
}

void RankLinkServer::drain() {
  // Accept what is queued too: an excepthook's connection may be waiting.
  if (acceptor_.is_open()) accept_pending();
  std::vector<std::shared_ptr<Connection>> live;
  for (auto& [id, weak] : connections_) {
    if (auto c = weak.lock()) live.push_back(std::move(c));
  }
  for (auto& c : live) c->drain();
}

void RankLinkServer::close() {
  *alive_ = false;
  boost::system::error_code ignored;
  retry_timer_.cancel();
  acceptor_.close(ignored);
}

void RankLinkServer::accept_next() {
  auto alive = alive_;
  acceptor_.async_wait(boost::asio::posix::descriptor_base::wait_read,
                       [this, alive](const boost::system::error_code& ec) {
                         if (ec || !*alive) return;
                         if (accept_pending()) accept_next();
                       });
}

bool RankLinkServer::accept_pending() {
  auto alive = alive_;
  for (;;) {
    UniqueFd fd(accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      SUP_LOG_WARN("accept on the rank socket failed: %s; retrying in 1 s", strerror(errno));
      retry_timer_.expires_after(std::chrono::seconds(1));
      retry_timer_.async_wait([this, alive](const boost::system::error_code& tec) {
        if (!tec && *alive) accept_next();
      });
      return false;
    }
    if (open_connections_ >= kMaxConnections) {
      SUP_LOG_WARN("too many rank connections (%zu): refusing one", open_connections_);
      continue;  // `fd` closes
    }
    ++open_connections_;
    const uint64_t id = next_id_++;
    auto conn = std::make_shared<Connection>(this, fd.release(), id);  // its socket owns it
    connections_[id] = conn;
    conn->read_next();
  }
}

}  // namespace xpu_timer::supervisor
