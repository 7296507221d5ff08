#include "inject/testdata/fake_supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/env_names.h"

namespace xpu_timer::inject::testing {

std::unique_ptr<proto::StatusPage> RegisteredRank::snapshot() const {
  proto::StatusSnapshot snap;
  // The rank's background thread may hold the seqlock right now: a few tries.
  for (int i = 0; i < 16 && !page->read(&snap); ++i) {
  }
  if (!snap.page_ok()) return nullptr;
  auto copy = std::make_unique<proto::StatusPage>();
  std::memcpy(static_cast<void*>(copy.get()), static_cast<const void*>(&snap.page()),
              sizeof(proto::StatusPage));
  return copy;
}

uint64_t RegisteredRank::heartbeat_ns() const {
  proto::StatusSnapshot snap;
  page->read(&snap);
  return snap.heartbeat_ns();
}

void RegisteredRank::disconnect() {
  if (fd >= 0) close(fd);
  fd = -1;
}

FakeSupervisor::FakeSupervisor() {
  char tmpl[] = "/tmp/xpu_inject_test_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return;
  dir_ = tmpl;
  socket_path_ = dir_ + "/supervisor.sock";
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path_.c_str(), sizeof(addr.sun_path) - 1);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 16) != 0) {
    close(listen_fd_);
    listen_fd_ = -1;
  }
}

FakeSupervisor::~FakeSupervisor() {
  for (auto& r : ranks_) {
    r->disconnect();
  }
  for (int fd : extra_fds_) close(fd);
  if (listen_fd_ >= 0) close(listen_fd_);
  if (!dir_.empty()) {
    for (const auto& f : page_files()) unlink((dir_ + "/" + f).c_str());
    unlink(socket_path_.c_str());
    rmdir(dir_.c_str());
  }
}

std::vector<std::string> FakeSupervisor::env() const {
  return {std::string(proto::kEnvSocket) + "=" + socket_path_,
          std::string(proto::kEnvRunDir) + "=" + dir_};
}

bool FakeSupervisor::connection_pending(double timeout_s) {
  pollfd p{listen_fd_, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout_s * 1000)) <= 0) return false;
  const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) extra_fds_.push_back(fd);
  return fd >= 0;
}

RegisteredRank* FakeSupervisor::accept_rank(double timeout_s, std::string* error) {
  pollfd p{listen_fd_, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout_s * 1000)) <= 0) {
    *error = "no connection within the timeout";
    return nullptr;
  }
  auto rank = std::make_unique<RegisteredRank>();
  rank->fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (rank->fd < 0) {
    *error = std::string("accept: ") + std::strerror(errno);
    return nullptr;
  }
  pollfd q{rank->fd, POLLIN, 0};
  if (poll(&q, 1, static_cast<int>(timeout_s * 1000)) <= 0) {
    *error = "no RegisterMsg within the timeout";
    return nullptr;
  }
  char packet[proto::kMaxMessageBytes];
  const ssize_t n = recv(rank->fd, packet, sizeof(packet), 0);
  if (n < 0) {
    *error = std::string("recv: ") + std::strerror(errno);
    return nullptr;
  }
  if (!proto::decode_register(packet, static_cast<size_t>(n), &rank->msg, error)) {
    *error = "malformed RegisterMsg: " + *error;
    return nullptr;
  }
  rank->page =
      proto::StatusPageFile::attach(rank->msg.status_path, rank->msg.pid, rank->msg.rank, error);
  if (rank->page == nullptr) return nullptr;
  ranks_.push_back(std::move(rank));
  return ranks_.back().get();
}

std::vector<std::string> FakeSupervisor::page_files() const {
  std::vector<std::string> out;
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".page") == 0) out.push_back(name);
  }
  closedir(d);
  return out;
}

const proto::MetricSlot* find_metric(const proto::StatusPage& p, proto::OpName name,
                                     proto::DType dtype, int size_bucket) {
  for (uint32_t i = 0; i < p.nmetrics; ++i) {
    const proto::MetricSlot& s = p.metrics[i];
    if (s.name == static_cast<uint16_t>(name) && s.dtype == static_cast<uint8_t>(dtype) &&
        (size_bucket < 0 || s.size_bucket == size_bucket)) {
      return &s;
    }
  }
  return nullptr;
}

}  // namespace xpu_timer::inject::testing
