#include "supervisor/coordination/coordination_store.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <cctype>
#include <fstream>

#include "common/parse_number.h"
#include "supervisor/coordination/etcd_store.h"

namespace xpu_timer::supervisor {

CoordinationStore::~CoordinationStore() = default;

bool CoordinationStore::create(const std::string& key, const std::string& value, bool* created) {
  *created = put(key, value);
  return *created;
}

bool CoordinationStore::prefetch(const std::vector<PrefixQuery>& queries) {
  (void)queries;
  return true;
}

int64_t CoordinationStore::lease() const { return 0; }

int CoordinationStore::lease_ttl_s() const { return 0; }

namespace {

bool hostname_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

}  // namespace

bool parse_store_url(const std::string& url, StoreEndpoint* out, std::string* error) {
  const auto fail = [&](const std::string& why) {
    *error = "coordination store \"" + url + "\" is not etcd://HOST:PORT: " + why;
    return false;
  };
  const size_t sep = url.find("://");
  if (sep == std::string::npos) return fail("no scheme");
  const std::string scheme = url.substr(0, sep);
  if (scheme != "etcd" && scheme != "https" && scheme != "etcds") {
    return fail("scheme \"" + scheme + "\" is not supported (etcd, or https / etcds for TLS)");
  }
  std::string rest = url.substr(sep + 3);
  if (rest.find_first_of(",") != std::string::npos) return fail("give one endpoint only");
  if (rest.find_first_of("/?#") != std::string::npos) return fail("a path is not allowed");
  if (rest.find('@') != std::string::npos) return fail("no user in the URL (XPU_TIMER_ETCD_USER)");
  std::string host;
  std::string port_text;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string::npos) return fail("unclosed '[' in the host");
    host = rest.substr(1, close - 1);
    in6_addr a{};
    if (::inet_pton(AF_INET6, host.c_str(), &a) != 1) {
      return fail("\"" + host + "\" is not an IPv6 address");
    }
    if (close + 1 >= rest.size() || rest[close + 1] != ':') return fail("no port");
    port_text = rest.substr(close + 2);
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos) return fail("no port");
    host = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
    if (host.find(':') != std::string::npos) return fail("write an IPv6 host in brackets");
    for (char c : host) {
      if (!hostname_char(c)) return fail("bad character in the host \"" + host + "\"");
    }
  }
  if (host.empty()) return fail("no host");
  if (port_text.empty()) return fail("no port");
  const std::optional<int64_t> port = parse_int(port_text, 1, 65535);
  if (!port) return fail("port \"" + port_text + "\" is not a number from 1 to 65535");
  out->host = host;
  out->port = static_cast<int>(*port);
  out->tls = scheme != "etcd";
  return true;
}

bool check_store_security(const StoreEndpoint& endpoint, const StoreSecurity& s,
                          std::string* error) {
  if (!endpoint.tls && (!s.ca_file.empty() || !s.cert_file.empty() || !s.key_file.empty())) {
    *error = "etcd CA, certificate or key files are given but the coordinator URL is not TLS "
             "(write https://HOST:PORT)";
    return false;
  }
  if (s.cert_file.empty() != s.key_file.empty()) {
    *error = "an etcd client certificate needs its key, and a key its certificate";
    return false;
  }
  if (s.user.empty() && (!s.password.empty() || !s.password_file.empty())) {
    *error = "an etcd password is given without a user";
    return false;
  }
  if (!s.user.empty() && s.password.empty() && s.password_file.empty()) {
    *error = "the etcd user '" + s.user + "' is given without a password (give a password file)";
    return false;
  }
  for (const std::string* f : {&s.password_file, &s.ca_file, &s.cert_file, &s.key_file}) {
    if (!f->empty() && ::access(f->c_str(), R_OK) != 0) {
      *error = "cannot read " + *f + ": " + strerror(errno);
      return false;
    }
  }
  return true;
}

std::unique_ptr<CoordinationStore> open_coordination_store(const std::string& url, int lease_ttl_s,
                                                           std::string* error,
                                                           std::chrono::milliseconds call_timeout,
                                                           const StoreSecurity& security) {
  StoreEndpoint endpoint;
  if (!parse_store_url(url, &endpoint, error)) return nullptr;
  if (!check_store_security(endpoint, security, error)) return nullptr;
  StoreSecurity s = security;
  if (s.password.empty() && !s.password_file.empty()) {
    std::ifstream in(s.password_file);
    if (!in || !std::getline(in, s.password) || s.password.empty()) {
      *error = "cannot read a password from the first line of " + s.password_file;
      return nullptr;
    }
    if (!s.password.empty() && s.password.back() == '\r') s.password.pop_back();
  }
  std::shared_ptr<const TlsContext> tls;
  if (endpoint.tls) {
    tls = TlsContext::create(TlsSettings{s.ca_file, s.cert_file, s.key_file}, error);
    if (tls == nullptr) return nullptr;
  }
  if (lease_ttl_s < 1) {
    *error =
        "coordination store lease TTL " + std::to_string(lease_ttl_s) + " s: must be at least 1 s";
    return nullptr;
  }
  if (call_timeout.count() < 1) {
    *error = "coordination store call timeout " + std::to_string(call_timeout.count()) +
             " ms: must be at least 1 ms";
    return nullptr;
  }
  return std::make_unique<EtcdStore>(endpoint, lease_ttl_s, call_timeout, std::move(tls),
                                     s.user, s.password);
}

}  // namespace xpu_timer::supervisor
