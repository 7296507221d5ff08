#include "supervisor/http/dump_routes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "supervisor/http/dump_path.h"

namespace xpu_timer::supervisor {
namespace {

constexpr const char* kPlainType = "text/plain; charset=utf-8";
constexpr const char* kJsonType = "application/json";
constexpr const char* kHtmlType = "text/html; charset=utf-8";
constexpr const char* kBinaryType = "application/octet-stream";

// What an SVG flame graph needs (flamegraph/svg_renderer.cc): its inline
// <script> and onload="init(evt)" handler, its <style> and style=""
// attributes. Nothing may be loaded from anywhere, this server included, and
// nothing sent: an injected script could do no more than the page itself.
constexpr const char* kActiveCsp =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'self'";
// The Perfetto page also reads its trace from this server (fetch).
constexpr const char* kPerfettoCsp =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'";

HttpAnswer refusal(int status, const std::string& line) {
  return HttpAnswer{status, kPlainType, line + "\n"};
}

bool ends_with(const std::string& s, const char* tail) {
  const size_t n = strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// Whether `p` is UTF-8 without NUL or a control byte other than white space;
// a sequence cut by the end of the sample counts as text.
bool looks_like_text(const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      if (c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f')) return false;
      ++i;
      continue;
    }
    const size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (len == 0 || (c >= 0xe0 && len == 2)) return false;
    for (size_t k = 1; k < len; ++k) {
      if (i + k >= n) return true;
      if ((p[i + k] & 0xc0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

// The regular files with plain names directly in the folder open as `dir_fd`
// (which this takes), by name.
nlohmann::json list_files(int dir_fd, std::vector<std::pair<std::string, struct stat>>* folders) {
  DIR* d = ::fdopendir(dir_fd);
  if (d == nullptr) {
    ::close(dir_fd);
    return nlohmann::json::array();
  }
  std::vector<std::pair<std::string, uint64_t>> files;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    struct stat st {};
    if (!is_plain_name(name) ||
        ::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      continue;
    }
    if (S_ISREG(st.st_mode)) files.emplace_back(name, static_cast<uint64_t>(st.st_size));
    if (S_ISDIR(st.st_mode) && folders != nullptr) folders->emplace_back(name, st);
  }
  ::closedir(d);
  std::sort(files.begin(), files.end());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, bytes] : files) out.push_back({{"name", name}, {"bytes", bytes}});
  return out;
}

// The request's query has `key` ("perfetto", "perfetto=1").
bool query_has(const std::string& target, const std::string& key) {
  const size_t q = target.find('?');
  if (q == std::string::npos) return false;
  size_t at = q + 1;
  while (at <= target.size()) {
    const size_t end = std::min(target.find('&', at), target.size());
    const std::string item = target.substr(at, end - at);
    if (item == key || item.rfind(key + "=", 0) == 0) return true;
    at = end + 1;
  }
  return false;
}

std::string absolute(const std::string& dir) {
  char resolved[PATH_MAX];
  return ::realpath(dir.c_str(), resolved) != nullptr ? std::string(resolved) : dir;
}

}  // namespace

DumpRoutes::DumpRoutes(std::string dump_dir) : dump_dir_(absolute(dump_dir)) {}

nlohmann::json dump_listing(const std::string& dump_dir) {
  const int top = ::open(dump_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0) {
    throw std::runtime_error("cannot open the dump folder " + dump_dir + ": " + strerror(errno));
  }
  std::vector<std::pair<std::string, struct stat>> found;
  const UniqueFd top_again(::dup(top));  // fdopendir takes `top`; the folders open below this
  nlohmann::json files = list_files(top, &found);
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(-a.second.st_mtim.tv_sec, -a.second.st_mtim.tv_nsec, a.first) <
           std::make_tuple(-b.second.st_mtim.tv_sec, -b.second.st_mtim.tv_nsec, b.first);
  });
  nlohmann::json folders = nlohmann::json::array();
  for (const auto& [name, st] : found) {
    const int fd = top_again.valid() ? ::openat(top_again.get(), name.c_str(),
                                                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                     : -1;
    if (fd < 0) continue;  // gone, or swapped for a link, since readdir
    folders.push_back({{"name", name},
                       {"mtime_unix", static_cast<int64_t>(st.st_mtim.tv_sec)},
                       {"files", list_files(fd, nullptr)}});
  }
  return {{"dump_dir", dump_dir}, {"folders", std::move(folders)}, {"files", std::move(files)}};
}

std::string dump_content_type(const std::string& name, int fd) {
  if (ends_with(name, ".svg")) return "image/svg+xml";
  if (ends_with(name, ".json")) return kJsonType;
  if (ends_with(name, ".html") || ends_with(name, ".htm")) return kHtmlType;
  for (const char* ext : {".txt", ".log", ".stacks", ".folded", ".port"}) {
    if (ends_with(name, ext)) return kPlainType;
  }
  if (ends_with(name, ".timeline")) return kBinaryType;  // flight-recorder ring images
  unsigned char sample[1024];
  const ssize_t n = ::pread(fd, sample, sizeof(sample), 0);
  if (n < 0) return kBinaryType;
  return looks_like_text(sample, static_cast<size_t>(n)) ? kPlainType : kBinaryType;
}

std::string perfetto_page(const std::string& url_path) {
  // url_path is two plain names (dump_path.h): nothing in it needs escaping
  // in HTML; JSON quoting makes it a JavaScript string all the same.
  const std::string file = nlohmann::json("/dumps/" + url_path).dump();
  const std::string name = nlohmann::json(url_path.substr(url_path.rfind('/') + 1)).dump();
  return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + url_path +
         " in Perfetto UI</title>\n"
         "<style>body{font:15px sans-serif;margin:2em;max-width:48em}button{font-size:1em}"
         "</style></head>\n<body>\n<h1>" +
         url_path +
         "</h1>\n<p><button id=\"open\">Open in Perfetto UI</button> or <a href=\"/dumps/" +
         url_path +
         "\">download the trace</a></p>\n<p id=\"status\"></p>\n"
         "<p>The button opens https://ui.perfetto.dev in a new tab and hands it this trace from "
         "your browser (postMessage). Perfetto UI loads the trace in the browser; the supervisor "
         "never contacts it. Perfetto UI opens traces from localhost and 127.0.0.1 at once and "
         "asks first for those of other addresses.</p>\n<script>\n\"use strict\";\n"
         "const PERFETTO = \"https://ui.perfetto.dev\";\nconst FILE = " +
         file + ";\nconst NAME = " + name +
         ";\n"
         "const say = (t) => { document.getElementById(\"status\").textContent = t; };\n"
         "document.getElementById(\"open\").addEventListener(\"click\", async () => {\n"
         "  const win = window.open(PERFETTO);  // in the click: pop-up blockers allow it\n"
         "  if (!win) { say(\"The browser blocked the new tab: allow pop-ups for this page.\"); "
         "return; }\n"
         "  let buffer;\n"
         "  try {\n"
         "    say(\"Reading the trace...\");\n"
         "    const reply = await fetch(FILE);\n"
         "    if (!reply.ok) throw new Error(\"HTTP \" + reply.status);\n"
         "    buffer = await reply.arrayBuffer();\n"
         "  } catch (e) { say(\"Cannot read the trace: \" + e.message); return; }\n"
         "  say(\"Waiting for Perfetto UI (\" + buffer.byteLength + \" bytes to hand over)...\");\n"
         "  // Its message channel is not buffered: PING until it answers PONG.\n"
         "  const ping = setInterval(() => win.postMessage(\"PING\", PERFETTO), 50);\n"
         "  const give_up = setTimeout(() => { clearInterval(ping); "
         "say(\"Perfetto UI did not answer within 60 s.\"); }, 60000);\n"
         "  const on_message = (e) => {\n"
         "    if (e.source !== win || e.origin !== PERFETTO || e.data !== \"PONG\") return;\n"
         "    clearInterval(ping);\n    clearTimeout(give_up);\n"
         "    window.removeEventListener(\"message\", on_message);\n"
         "    win.postMessage({perfetto: {buffer: buffer, title: NAME, fileName: NAME}}, "
         "PERFETTO);\n"
         "    say(\"Handed to Perfetto UI.\");\n  };\n"
         "  window.addEventListener(\"message\", on_message);\n});\n</script>\n</body></html>\n";
}

// GET and HEAD (http_routes.cc): the server leaves out HEAD's body.
HttpAnswer DumpRoutes::answer(const std::string& target) const {
  const std::string path = target.substr(0, target.find('?'));
  DumpPath where;
  std::string why;
  bool too_deep = false;
  if (!parse_dump_path(std::string_view(path).substr(sizeof("/dumps") - 1), &where, &why,
                       &too_deep)) {
    return refusal(too_deep ? 404 : 400, why);
  }
  if (where.file.empty()) return HttpAnswer{200, kJsonType, dump_listing(dump_dir_).dump(2) + "\n"};
  OpenedDumpFile opened = open_dump_file(dump_dir_, where);
  if (opened.status != 200) return refusal(opened.status, opened.why);
  const std::string url_path = where.folder.empty() ? where.file : where.folder + "/" + where.file;
  HttpAnswer a;
  a.headers = {{"X-Content-Type-Options", "nosniff"},
               {"Referrer-Policy", "no-referrer"},
               {"Cache-Control", "no-cache"}};  // hang.json is replaced as the hang grows
  if (query_has(target, "perfetto")) {
    a.content_type = kHtmlType;
    a.body = perfetto_page(url_path);
    a.headers.emplace_back("Content-Security-Policy", kPerfettoCsp);
    return a;
  }
  a.content_type = dump_content_type(where.file, opened.fd.get());
  if (a.content_type == kHtmlType || a.content_type == "image/svg+xml") {
    a.headers.emplace_back("Content-Security-Policy", kActiveCsp);
  }
  if (a.content_type == kBinaryType) {
    a.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + where.file + "\"");
  }
  a.file_bytes = opened.bytes;
  a.file = std::make_shared<UniqueFd>(std::move(opened.fd));
  return a;
}

}  // namespace xpu_timer::supervisor
