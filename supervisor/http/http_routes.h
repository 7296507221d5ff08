// What each HTTP request gets, independent of the transport: the supervisor's
// routes and their error answers. Pure dispatch over the handlers; any thread
// (the handlers themselves must be thread-safe). Every handler exception
// becomes a 500 with a one-line body.
#pragma once

#include <functional>
#include <string>

namespace xpu_timer::supervisor {

struct HttpHandlers {
  std::function<std::string()> hang_json;
  std::function<std::string()> ranks_json;
  std::function<std::string()> metrics_text;
  // POST /dump/stacks: returns the HTTP status (202 started, 409 busy, ...)
  // and sets the JSON body. Unset: 501.
  std::function<int(std::string* json_body)> dump_stacks = nullptr;
  // POST /dump/timeline (and xpu-timer's POST /HostingService/DumpKernelTrace):
  // the flight recorders, written synchronously. Unset: 501.
  std::function<int(std::string* json_body)> dump_timeline = nullptr;
  // GET /slow: the straggler verdict. Unset: 404.
  std::function<std::string()> slow_json = nullptr;
  // GET /overview: the job at a glance, what the operator page (GET /)
  // polls (analysis/overview_json.h). Unset: 404, which the page says.
  std::function<std::string()> overview_json = nullptr;
};

struct HttpAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
};

// `method` as sent ("GET"), `target` the request target ("/metrics?x=1").
// GET / is the operator page (operator_page.h); HEAD is GET without the body
// (the server sends the headers only).
HttpAnswer route_request(const HttpHandlers& handlers, const std::string& method,
                         const std::string& target);

}  // namespace xpu_timer::supervisor
