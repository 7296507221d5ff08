#include "tests/harness/etcd_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "tests/harness/http_probe.h"

namespace xpu_timer::testing {

int bind_loopback_port(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

std::vector<int> free_loopback_ports(int n) {
  std::vector<int> fds;
  std::vector<int> ports;
  for (int i = 0; i < n; ++i) {
    int port = 0;
    const int fd = bind_loopback_port(&port);
    if (fd < 0) {
      ADD_FAILURE() << "cannot bind a loopback port";
      continue;
    }
    fds.push_back(fd);
    ports.push_back(port);
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

std::string EtcdServer::binary() {
  if (::access("/usr/bin/etcd", X_OK) == 0) return "/usr/bin/etcd";
  const char* path = std::getenv("PATH");
  const std::string dirs = path == nullptr ? "" : path;
  for (size_t start = 0; start <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/etcd";
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

bool EtcdServer::start(const std::string& data_dir) {
  const std::string bin = binary();
  if (bin.empty()) {
    ADD_FAILURE() << kEtcdMissing;
    return false;
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (client_port_ == 0 || attempt > 0) {
      const std::vector<int> ports = free_loopback_ports(2);
      if (ports.size() != 2) return false;  // the failure is reported
      client_port_ = ports[0];
      peer_port_ = ports[1];
    }
    const bool tls = !tls_ca_.empty();
    const std::string client_url =
        (tls ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(client_port_);
    const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer_port_);
    ChildOptions options;
    options.log_path = dir_ + "/etcd.log";
    std::vector<std::string> argv = {
        bin, "--name", "xpu", "--data-dir", data_dir, "--listen-client-urls", client_url,
        "--advertise-client-urls", client_url, "--listen-peer-urls", peer_url,
        "--initial-advertise-peer-urls", peer_url, "--initial-cluster", "xpu=" + peer_url};
    if (tls) {
      argv.insert(argv.end(), {"--cert-file", tls_cert_, "--key-file", tls_key_,
                               "--client-cert-auth", "--trusted-ca-file", tls_ca_});
    }
    child_ = Child::start(argv, {"ETCD_NAME=", "ETCD_DATA_DIR=", "ETCDCTL_API="}, options);
    if (child_ == nullptr) return false;
    bool exited = false;
    const bool up = wait_until(
        [&] {
          if (child_->wait_for(std::chrono::milliseconds(0)).has_value()) {
            exited = true;
            return true;
          }
          // Over TLS /health needs a client certificate: etcd's own line
          // saying it serves clients instead.
          if (tls) return child_->output().find("serving client requests on") != std::string::npos;
          const auto reply = http_get(client_port_, "/health");
          return reply.has_value() && reply->status == 200 &&
                 reply->body.find("true") != std::string::npos;
        },
        std::chrono::seconds(60));
    if (up && !exited) return true;
    const std::string log = child_->output();
    child_.reset();
    // Another process took a port between our choice and etcd's bind: new ports.
    if (exited && log.find("address already in use") != std::string::npos) continue;
    ADD_FAILURE() << "etcd did not become healthy (" << (exited ? "it exited" : "60 s")
                  << "); its log:\n"
                  << log;
    return false;
  }
  ADD_FAILURE() << "etcd found its ports taken three times";
  return false;
}

}  // namespace xpu_timer::testing
