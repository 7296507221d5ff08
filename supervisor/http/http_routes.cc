#include "supervisor/http/http_routes.h"

#include <exception>

#include "supervisor/http/operator_page.h"
#include "supervisor/metrics/metrics_exporter.h"

namespace xpu_timer::supervisor {
namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kText = "text/plain; charset=utf-8";
constexpr const char* kHtml = "text/html; charset=utf-8";

HttpAnswer text(int status, std::string body) { return HttpAnswer{status, kText, std::move(body)}; }

template <typename F>
HttpAnswer guarded(F&& produce) {
  try {
    return produce();
  } catch (const std::exception& e) {
    return text(500, std::string("internal error: ") + e.what() + "\n");
  } catch (...) {
    return text(500, "internal error\n");
  }
}

}  // namespace

HttpAnswer route_request(const HttpHandlers& handlers, const std::string& method,
                         const std::string& target, const std::string& body,
                         const std::string& peer) {
  const std::string path = target.substr(0, target.find('?'));
  const bool get = method == "GET" || method == "HEAD";
  if (path == "/healthz" || path == "/hang" || path == "/ranks" || path == "/metrics") {
    if (!get) return text(405, "method " + method + " not allowed on " + path + "\n");
    if (path == "/healthz") return text(200, "ok\n");
    if (path == "/hang") {
      return guarded([&] { return HttpAnswer{200, kJson, handlers.hang_json() + "\n"}; });
    }
    if (path == "/ranks") {
      return guarded([&] { return HttpAnswer{200, kJson, handlers.ranks_json() + "\n"}; });
    }
    return guarded([&] { return HttpAnswer{200, kMetricsContentType, handlers.metrics_text()}; });
  }
  if (path == "/") {
    if (!get) return text(405, "method " + method + " not allowed on " + path + "\n");
    return HttpAnswer{200, kHtml, std::string(operator_page_html())};
  }
  // GET routes served when their handler is set.
  for (const auto& [route, handler] :
       {std::pair{"/slow", &handlers.slow_json}, std::pair{"/overview", &handlers.overview_json}}) {
    if (path != route || !*handler) continue;
    if (!get) return text(405, "method " + method + " not allowed on " + path + "\n");
    // C++17 lambdas cannot capture a structured binding: capture a copy.
    const auto* serve = handler;
    return guarded([serve] { return HttpAnswer{200, kJson, (*serve)() + "\n"}; });
  }
  if (path == "/dump/stacks" && handlers.dump_stacks) {
    if (method != "POST") return text(405, "method " + method + " not allowed on " + path + "\n");
    return guarded([&] {
      std::string body;
      const int status = handlers.dump_stacks(&body);
      return HttpAnswer{status, kJson, body + "\n"};
    });
  }
  if ((path == "/dump/timeline" || path == "/HostingService/DumpKernelTrace") &&
      handlers.dump_timeline) {
    if (method != "POST") return text(405, "method " + method + " not allowed on " + path + "\n");
    return guarded([&] {
      std::string body;
      const int status = handlers.dump_timeline(&body);
      return HttpAnswer{status, kJson, body + "\n"};
    });
  }
  if ((path == "/dumps" || path.rfind("/dumps/", 0) == 0) && handlers.dumps) {
    if (!get) return text(405, "method " + method + " not allowed on /dumps\n");
    return guarded([&] { return handlers.dumps(target); });
  }
  if (path == "/config" && handlers.config_json) {
    if (get) return guarded([&] { return HttpAnswer{200, kJson, handlers.config_json() + "\n"}; });
    if (method != "POST" || !handlers.set_config) {
      return text(405, "method " + method + " not allowed on " + path + "\n");
    }
    return guarded([&] {
      std::string reply;
      const int status = handlers.set_config(body, peer, &reply);
      return HttpAnswer{status, status == 200 ? kJson : kText, reply + "\n"};
    });
  }
  // Routes of docs/architecture.md ("The processes") that later components serve.
  if (path == "/dump/stacks" || path == "/dump/timeline" ||
      path == "/HostingService/DumpKernelTrace") {
    return text(501, path + " is not implemented in this build\n");
  }
  std::string shown = path.size() > 200 ? path.substr(0, 200) + "..." : path;
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text(404, "not found: " + shown + " (try /metrics, /hang, /slow, /ranks, /healthz)\n");
}

}  // namespace xpu_timer::supervisor
