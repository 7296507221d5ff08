#include "supervisor/coordination/tls_stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <string.h>

#include <algorithm>

namespace xpu_timer::supervisor {
namespace {

// OpenSSL's queued errors as one line (and the queue emptied: it is per
// thread, and a stale entry would be blamed on the next call).
std::string ssl_errors(const char* fallback) {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? fallback : out;
}

int remaining_ms(TlsStream::Deadline deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, 1 << 30));
}

}  // namespace

std::unique_ptr<TlsContext> TlsContext::create(const TlsSettings& s, std::string* error) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    *error = "TLS: cannot make a context: " + ssl_errors("SSL_CTX_new failed");
    return nullptr;
  }
  std::unique_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // etcd closes after the answer (Connection: close) without a close_notify
  // at times: the body's length tells us whether the answer is whole.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  const bool ca_ok = s.ca_file.empty()
                         ? SSL_CTX_set_default_verify_paths(ctx) == 1
                         : SSL_CTX_load_verify_locations(ctx, s.ca_file.c_str(), nullptr) == 1;
  if (!ca_ok) {
    *error = "TLS: cannot load the CA file " +
             (s.ca_file.empty() ? std::string("(system default)") : s.ca_file) + ": " +
             ssl_errors("unknown reason");
    return nullptr;
  }
  if (s.cert_file.empty() != s.key_file.empty()) {
    *error = "TLS: a client certificate needs its key and a key its certificate";
    return nullptr;
  }
  if (!s.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, s.cert_file.c_str()) != 1) {
      *error = "TLS: cannot load the client certificate " + s.cert_file + ": " +
               ssl_errors("unknown reason");
      return nullptr;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, s.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      *error = "TLS: cannot use the client key " + s.key_file + ": " + ssl_errors("unknown reason");
      return nullptr;
    }
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

TlsStream::~TlsStream() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // no close_notify: the socket is closed next
}

bool TlsStream::wait(int rc, const char* what, Deadline deadline, std::string* error) {
  const int err = SSL_get_error(ssl_, rc);
  short events = 0;
  if (err == SSL_ERROR_WANT_READ) {
    events = POLLIN;
  } else if (err == SSL_ERROR_WANT_WRITE) {
    events = POLLOUT;
  } else if (err == SSL_ERROR_SYSCALL && errno != 0) {
    *error = std::string(what) + ": " + strerror(errno);
    return false;
  } else {
    *error = std::string(what) + ": " + ssl_errors("the connection closed");
    if (err == SSL_ERROR_SSL && SSL_get_verify_result(ssl_) != X509_V_OK) {
      *error += " (certificate: " +
                std::string(X509_verify_cert_error_string(SSL_get_verify_result(ssl_))) + ")";
    }
    return false;
  }
  for (;;) {
    pollfd p{fd_, events, 0};
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n > 0) return true;
    if (n == 0) {
      *error = std::string("timed out in ") + what;
      return false;
    }
    if (errno != EINTR) {
      *error = std::string(what) + ": poll: " + strerror(errno);
      return false;
    }
  }
}

bool TlsStream::connect(const TlsContext& ctx, int fd, const std::string& host, Deadline deadline,
                        std::string* error) {
  ERR_clear_error();
  ssl_ = SSL_new(ctx.get());
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd) != 1) {
    *error = "TLS: " + ssl_errors("SSL_new failed");
    return false;
  }
  fd_ = fd;
  in6_addr any{};
  const bool literal = ::inet_pton(AF_INET, host.c_str(), &any) == 1 ||
                       ::inet_pton(AF_INET6, host.c_str(), &any) == 1;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
  const bool named = literal ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1
                             : SSL_set1_host(ssl_, host.c_str()) == 1 &&
                                   SSL_set_tlsext_host_name(ssl_, host.c_str()) == 1;
  if (!named) {
    *error = "TLS: cannot check the server's name " + host + ": " + ssl_errors("unknown reason");
    return false;
  }
  for (;;) {
    errno = 0;
    const int rc = SSL_connect(ssl_);
    if (rc == 1) return true;
    if (!wait(rc, "TLS handshake", deadline, error)) return false;
  }
}

bool TlsStream::write_all(const std::string& data, Deadline deadline, std::string* error) {
  for (size_t sent = 0; sent < data.size();) {
    ERR_clear_error();
    errno = 0;
    size_t n = 0;
    const int rc = SSL_write_ex(ssl_, data.data() + sent, data.size() - sent, &n);
    if (rc == 1) {
      sent += n;
      continue;
    }
    if (!wait(rc, "TLS write", deadline, error)) return false;
  }
  return true;
}

long TlsStream::read(char* buf, size_t size, Deadline deadline, std::string* error) {
  for (;;) {
    ERR_clear_error();
    errno = 0;
    size_t n = 0;
    const int rc = SSL_read_ex(ssl_, buf, size, &n);
    if (rc == 1) return static_cast<long>(n);
    const int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_ZERO_RETURN) return 0;
    // An EOF without close_notify (SSL_OP_IGNORE_UNEXPECTED_EOF makes it a
    // plain end): the parser judges whether the answer was whole.
    if (err == SSL_ERROR_SYSCALL && errno == 0) return 0;
    if (!wait(rc, "TLS read", deadline, error)) return -1;
  }
}

}  // namespace xpu_timer::supervisor
