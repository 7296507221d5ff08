// Which HTTP requests may change state: the browser-facing guard of the
// supervisor's POST endpoints (/dump/stacks, /dump/timeline,
// /HostingService/DumpKernelTrace, /config). A web page the operator has open
// can make the browser send requests to 127.0.0.1:18888; two checks keep such
// a page from triggering dumps (each of which stops every rank under ptrace)
// or changing the settings:
//  - Origin: a browser names the page that sent a cross-origin request in an
//    `Origin` header. A request carrying one must come from this server's own
//    origin (`http://` + its Host header); curl, Prometheus and scripts send
//    none and pass.
//  - Host (DNS rebinding): a page of evil.example can re-point its own name at
//    127.0.0.1, after which its requests are same-origin for the browser but
//    carry `Host: evil.example`. The Host must therefore be `localhost`, this
//    machine's name, a loopback address or the address we listen on (any IP
//    address when listening on 0.0.0.0 or ::): names an attacker cannot point.
// GET and HEAD are never refused: they read, and a read reveals nothing a
// Prometheus scrape does not. Pure apart from reading the host name once at
// construction; any thread.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace xpu_timer::supervisor {

class RequestGuard {
 public:
  // `listen_host` as given to --host ("127.0.0.1", "0.0.0.0", "::1").
  // `machine_name` overrides gethostname() (tests).
  explicit RequestGuard(std::string listen_host,
                        std::optional<std::string> machine_name = std::nullopt);

  // Empty when the request may run; else one line saying why it is refused,
  // the body of a 403. `host` and `origin` are the headers, nullopt if absent.
  std::string refusal(std::string_view method, std::optional<std::string_view> host,
                      std::optional<std::string_view> origin) const;

 private:
  bool host_allowed(std::string_view host_header) const;

  std::string listen_host_;  // lower case, without brackets
  std::optional<boost::asio::ip::address> listen_address_;
  bool listen_any_ = false;   // 0.0.0.0 or ::
  std::string machine_name_;  // lower case; "" if unknown
};

}  // namespace xpu_timer::supervisor
