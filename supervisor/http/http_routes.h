// What each HTTP request gets, independent of the transport: the supervisor's
// routes and their error answers. Pure dispatch over the handlers; any thread
// (the handlers themselves must be thread-safe). Every handler exception
// becomes a 500 with a one-line body.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/unique_fd.h"

namespace xpu_timer::supervisor {

struct HttpAnswer;

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
  // GET /dumps and GET /dumps/... (dump_routes.h), given the whole request
  // target. Unset: 404.
  std::function<HttpAnswer(const std::string& target)> dumps = nullptr;
  // GET /config: the live settings and their ranges (JSON). Unset: 404.
  std::function<std::string()> config_json = nullptr;
  // POST /config: returns the HTTP status (200 applied, 400 refused, ...) and
  // sets the JSON or text body; `peer` is the client's address, for the log.
  std::function<int(const std::string& body, const std::string& peer, std::string* reply)>
      set_config = nullptr;
};

struct HttpAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
  // Header fields beyond Content-Type (X-Content-Type-Options, ...).
  std::vector<std::pair<std::string, std::string>> headers = {};
  // Set: the body is this open regular file, file_bytes long, streamed from
  // its start instead of `body` (a trace of hundreds of MB never sits in memory).
  std::shared_ptr<UniqueFd> file = nullptr;
  uint64_t file_bytes = 0;
};

// `method` as sent ("GET"), `target` the request target ("/metrics?x=1"),
// `body` the request's body, `peer` the client's address ("127.0.0.1").
// GET / is the operator page (operator_page.h); HEAD is GET without the body
// (the server sends the headers only).
HttpAnswer route_request(const HttpHandlers& handlers, const std::string& method,
                         const std::string& target, const std::string& body = "",
                         const std::string& peer = "");

}  // namespace xpu_timer::supervisor
