#include "supervisor/http/http_request_guard.h"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <cctype>

namespace xpu_timer::supervisor {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "127.0.0.1:18888" -> "127.0.0.1", "[::1]:18888" -> "::1", "LocalHost" -> "localhost".
std::string host_part(std::string_view header) {
  std::string_view h = header;
  while (!h.empty() && (h.front() == ' ' || h.front() == '\t')) h.remove_prefix(1);
  while (!h.empty() && (h.back() == ' ' || h.back() == '\t')) h.remove_suffix(1);
  if (!h.empty() && h.front() == '[') {
    const size_t close = h.find(']');
    return close == std::string_view::npos ? std::string() : lower(h.substr(1, close - 1));
  }
  return lower(h.substr(0, h.find(':')));
}

std::optional<boost::asio::ip::address> ip_literal(const std::string& host) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(host, ec);  // parses, never resolves
  if (ec) return std::nullopt;
  return address;
}

std::string shown(std::string_view value) {
  std::string s(value.substr(0, 100));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return value.size() > 100 ? s + "..." : s;
}

std::string gethostname_lower() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return lower(name);
}

}  // namespace

RequestGuard::RequestGuard(std::string listen_host, std::optional<std::string> machine_name)
    : listen_host_(
          host_part(listen_host.find(':') != std::string::npos && listen_host.front() != '['
                        ? "[" + listen_host + "]"  // a bare IPv6 address
                        : listen_host)),
      machine_name_(machine_name ? lower(*machine_name) : gethostname_lower()) {
  listen_address_ = ip_literal(listen_host_);
  listen_any_ = listen_address_ && listen_address_->is_unspecified();
}

bool RequestGuard::host_allowed(std::string_view host_header) const {
  const std::string host = host_part(host_header);
  if (host.empty()) return false;
  if (host == "localhost" || host == listen_host_) return true;
  if (!machine_name_.empty() &&
      (host == machine_name_ || machine_name_.rfind(host + ".", 0) == 0)) {
    return true;  // the name, or its first label ("node7" of "node7.cluster")
  }
  const auto address = ip_literal(host);
  if (!address) return false;  // some other name: possibly rebound to us
  return address->is_loopback() || listen_any_ || address == listen_address_;
}

std::string RequestGuard::refusal(std::string_view method, std::optional<std::string_view> host,
                                  std::optional<std::string_view> origin) const {
  if (method == "GET" || method == "HEAD") return "";
  if (host && !host_allowed(*host)) {
    return "refused: Host '" + shown(*host) +
           "' is not this server (use localhost, this machine's name or an IP address of it)";
  }
  if (origin) {
    // A browser's same-origin request names the origin it was loaded from,
    // which for a page served by us is http://<the Host it asked for>.
    if (!host || lower(*origin) != "http://" + lower(*host)) {
      return "refused: cross-origin request from '" + shown(*origin) +
             "'; only tools that send no Origin header (curl, scripts) may " + std::string(method) +
             " here";
    }
  }
  return "";
}

}  // namespace xpu_timer::supervisor
