// TLS for the coordination store's HTTP client (http_client.h), on OpenSSL:
// a context holding what the client trusts and shows (a CA file, a client
// certificate and key, as etcd's --trusted-ca-file / --client-cert-auth
// deployments ask), and one TLS session per connection over a non-blocking
// socket, every step bounded by the caller's deadline. The server's
// certificate must chain to the CA and name the host we dialled (a DNS name,
// or an IP address in its subjectAltName). Not synchronised: one owner
// thread (a context may be shared by the sessions it makes, one at a time).
#pragma once

#include <chrono>
#include <memory>
#include <string>

struct ssl_ctx_st;
struct ssl_st;

namespace xpu_timer::supervisor {

struct TlsSettings {
  std::string ca_file;    // PEM; "" for the system's default CAs
  std::string cert_file;  // PEM client certificate ("" for none), with key_file
  std::string key_file;
};

class TlsContext {
 public:
  // Null with one line naming the file and OpenSSL's reason when a file
  // cannot be loaded or the key does not match the certificate.
  static std::unique_ptr<TlsContext> create(const TlsSettings& settings, std::string* error);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  ssl_ctx_st* get() const { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

// One TLS session on a connected non-blocking socket it does not own.
class TlsStream {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  TlsStream() = default;
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // The handshake, verifying the server's certificate for `host`.
  bool connect(const TlsContext& ctx, int fd, const std::string& host, Deadline deadline,
               std::string* error);
  bool write_all(const std::string& data, Deadline deadline, std::string* error);
  // Up to `size` bytes: > 0 read, 0 at the end of the stream, -1 with `error`.
  long read(char* buf, size_t size, Deadline deadline, std::string* error);

 private:
  // Waits for what OpenSSL asked for after `rc`; false with `error` set.
  bool wait(int rc, const char* what, Deadline deadline, std::string* error);
  ssl_st* ssl_ = nullptr;
  int fd_ = -1;
};

}  // namespace xpu_timer::supervisor
