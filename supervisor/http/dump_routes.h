// GET /dumps and GET /dumps/...: the dump folder over HTTP, read-only
// (docs/usage.md "HTTP"). GET /dumps lists it as JSON:
//   {"dump_dir": "/abs/path",
//    "folders": [{"name": "stacks-...", "mtime_unix": 1764000000,
//                 "files": [{"name": "cpp_stack.svg", "bytes": 123}, ...]}, ...],
//    "files": [{"name": "hang.json", "bytes": 456}, ...]}
// folders newest first (then by name), files by name; only plain names
// (dump_path.h), regular files and the folders directly under the dump
// folder, which is all the supervisor writes. GET /dumps/<file> serves a file
// of the top level, GET /dumps/<folder>/<file> one of a folder, streamed
// (HttpAnswer::file), with a content type by extension, nosniff, and for
// SVG and HTML a Content-Security-Policy that lets their own inline script
// and style run but loads nothing from anywhere.
// GET /dumps/<folder>/<file>?perfetto answers a small page whose button
// opens the trace in Perfetto UI (https://ui.perfetto.dev) from the
// operator's browser: Perfetto UI cannot fetch from this server (no CORS,
// and localhost is the browser's, not Perfetto's), so the page reads the
// file itself and hands it over with Perfetto's documented window.open +
// PING/PONG + postMessage protocol. The supervisor never contacts Perfetto.
// Any thread; holds only the folder's path.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "supervisor/http/http_routes.h"

namespace xpu_timer::supervisor {

class DumpRoutes {
 public:
  explicit DumpRoutes(std::string dump_dir);

  // `target`: the whole request target ("/dumps/x/timeline.json?perfetto")
  // of a GET or HEAD.
  HttpAnswer answer(const std::string& target) const;

 private:
  std::string dump_dir_;  // absolute, as realpath(3) gave it at construction
};

// GET /dumps's document (see above); throws std::runtime_error with one line
// when the dump folder cannot be read.
nlohmann::json dump_listing(const std::string& dump_dir);

// "image/svg+xml", "application/json", "text/plain; charset=utf-8", ...:
// by extension, else text/plain when the file's first KiB (read from `fd`
// with pread, the offset kept) is UTF-8 without NUL, else
// application/octet-stream.
std::string dump_content_type(const std::string& name, int fd);

// The Perfetto UI page of /dumps/<url_path> (url_path: "<folder>/<file>").
std::string perfetto_page(const std::string& url_path);

}  // namespace xpu_timer::supervisor
