// What the end-to-end tests add to the child-process harness
// (tests/harness/child_process.h): the folders baked in at build time, fresh
// temporary folders, and a raw HTTP client for the supervisor's endpoints.
// Used by the test's main thread only.
#pragma once

#include <optional>
#include <string>

#include "tests/harness/child_process.h"

namespace xpu_timer::testing {

// Folders baked in at build time.
std::string build_dir();
std::string source_dir();
std::string python3();

// A fresh empty folder under the test temp dir, removed by nobody (CTest runs in the build tree).
std::string make_temp_dir(const std::string& name);

// HTTP GET on 127.0.0.1:port; nullopt when the connection fails.
struct HttpReply {
  int status = 0;
  std::string body;
};
std::optional<HttpReply> http_get(int port, const std::string& path);
// POST with an empty body.
std::optional<HttpReply> http_post(int port, const std::string& path);
std::optional<HttpReply> http_request(int port, const std::string& method, const std::string& path);

}  // namespace xpu_timer::testing
