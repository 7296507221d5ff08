// A real etcd (Debian's etcd-server, /usr/bin/etcd) for the tests of the
// coordination store and of jobs spanning several nodes: started on free
// loopback ports with its data in a folder of the test's, ready once its
// /health answers (bounded wait, no fixed sleep), killed by the destructor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/harness/child_process.h"

namespace xpu_timer::testing {

// A TCP socket bound to a free loopback port, not listening; -1 on failure.
int bind_loopback_port(int* port);
// Loopback ports free right now (held together while chosen, so they differ).
std::vector<int> free_loopback_ports(int n);

class EtcdServer {
 public:
  // /usr/bin/etcd, or `etcd` on PATH; "" when neither exists (skip the test,
  // naming kEtcdMissing).
  static std::string binary();
  static constexpr const char* kEtcdMissing =
      "etcd is not installed (Debian's etcd-server package provides /usr/bin/etcd)";

  // `dir`: a folder of the test's (its log goes there).
  explicit EtcdServer(std::string dir) : dir_(std::move(dir)) {}
  // Serves clients over TLS with this server certificate and key, and
  // accepts only clients with a certificate signed by `ca`
  // (--client-cert-auth --trusted-ca-file): call before start().
  void use_tls(std::string ca, std::string cert, std::string key) {
    tls_ca_ = std::move(ca);
    tls_cert_ = std::move(cert);
    tls_key_ = std::move(key);
  }
  ~EtcdServer() { stop(); }

  // Starts etcd on `data_dir` (new free ports the first time, the same ports
  // after a stop) and waits until it is healthy, it exits, or 60 s. False
  // (with a test failure holding etcd's log) when it did not come up.
  bool start(const std::string& data_dir);
  void stop() { child_.reset(); }  // SIGKILL and reap
  bool running() const { return child_ != nullptr; }
  Child& child() { return *child_; }
  int client_port() const { return client_port_; }
  std::string url() const {
    return (tls_ca_.empty() ? "etcd://127.0.0.1:" : "https://127.0.0.1:") +
           std::to_string(client_port_);
  }

 private:
  std::string dir_;
  int client_port_ = 0;
  int peer_port_ = 0;
  std::unique_ptr<Child> child_;
  std::string tls_ca_, tls_cert_, tls_key_;
};

}  // namespace xpu_timer::testing
