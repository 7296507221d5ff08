#include "inject/supervisor_link.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace xpu_timer::inject {

bool SupervisorLink::connect_and_register(const char* socket_path, const proto::RegisterMsg& msg) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (std::strlen(socket_path) >= sizeof(addr.sun_path)) {
    XPU_TIMER_LOG_WARN("socket path %s is too long; timing is off", socket_path);
    return false;
  }
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path);
  // Non-blocking: a unix socket connect() blocks while the listener's backlog
  // is full, and we run inside the user's first CUDA library call.
  fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) {
    XPU_TIMER_LOG_WARN("socket(AF_UNIX) failed: %s; timing is off", std::strerror(errno));
    return false;
  }
  int rc = -1;
  for (int attempt = 0; attempt < 200; ++attempt) {  // at most ~1 s
    rc = ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
    if (rc == 0 || (errno != EAGAIN && errno != EINTR)) break;
    const timespec pause{0, 5 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  if (rc != 0) {
    XPU_TIMER_LOG_WARN("connect(%s) failed: %s; running without the supervisor", socket_path,
                       std::strerror(errno));
    close_fd();
    return false;
  }
  ssize_t sent = -1;
  for (int attempt = 0; attempt < 200; ++attempt) {
    sent = ::send(fd_, &msg, sizeof(msg), MSG_NOSIGNAL);
    if (sent >= 0 || (errno != EAGAIN && errno != EINTR)) break;
    const timespec pause{0, 5 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  if (sent != static_cast<ssize_t>(sizeof(msg))) {
    XPU_TIMER_LOG_WARN("send(register) to %s failed: %s; running without the supervisor",
                       socket_path, sent < 0 ? std::strerror(errno) : "short write");
    close_fd();
    return false;
  }
  return true;
}

bool SupervisorLink::alive() {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  const int n = ::poll(&p, 1, 0);
  if (n < 0) return errno == EINTR;
  if (n == 0) return true;
  if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return false;
  if (p.revents & POLLIN) {
    char buf[512];
    for (int i = 0; i < 16; ++i) {
      const ssize_t r = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (r == 0) return false;  // orderly shutdown by the supervisor
      if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    }
  }
  return true;
}

void SupervisorLink::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace xpu_timer::inject
