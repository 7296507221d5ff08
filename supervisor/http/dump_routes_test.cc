// The dump folder over HTTP: which request paths name which file (a table of
// hostile ones), what opening refuses (links out of the folder, a FIFO, a
// socket, a folder), the listing, the content types, and the whole route
// through a real HttpServer on a loopback port.
#include "supervisor/http/dump_routes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "supervisor/http/dump_path.h"
#include "supervisor/http/http_server.h"
#include "tests/harness/http_probe.h"

namespace xpu_timer::supervisor {
namespace {

namespace fs = std::filesystem;

// A dump folder as the supervisor leaves it, plus what an attacker could put
// next to it: a secret outside, links to it, a FIFO, a socket.
class DumpTree {
 public:
  DumpTree() {
    char tmpl[] = "/tmp/xpu_dump_routes_XXXXXX";
    root_ = ::mkdtemp(tmpl);
    dir_ = root_ + "/dump";
    fs::create_directories(dir_ + "/stacks-20261123-112233.456");
    fs::create_directories(dir_ + "/timeline-20261123-112240.000-hang");
    write(root_ + "/secret.txt", "the secret\n");
    write(dir_ + "/hang.json", "{\"hung\":true}\n");
    write(dir_ + "/supervisor.log", "log line\n");
    write(dir_ + "/stacks-20261123-112233.456/cpp_stack.svg", "<svg><script>1</script></svg>");
    write(dir_ + "/stacks-20261123-112233.456/00000-00002.stacktrace", "frame a\nframe b\n");
    write(dir_ + "/timeline-20261123-112240.000-hang/timeline.json", "{\"traceEvents\":[]}");
    write(dir_ + "/timeline-20261123-112240.000-hang/00000-00002.timeline",
          std::string("XPUR\0\x01\x02", 7));
    write(dir_ + "/.hidden", "hidden");
    fs::create_symlink(root_ + "/secret.txt", dir_ + "/link.txt");
    fs::create_symlink(root_, dir_ + "/linkdir");
    fs::create_symlink("../../secret.txt", dir_ + "/stacks-20261123-112233.456/up.txt");
    EXPECT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
    bind_socket(dir_ + "/sock");
    // The stacks folder is the newer one.
    set_mtime(dir_ + "/timeline-20261123-112240.000-hang", 1'700'000'000);
    set_mtime(dir_ + "/stacks-20261123-112233.456", 1'700'000'100);
  }
  ~DumpTree() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  const std::string& dir() const { return dir_; }
  const std::string& root() const { return root_; }

  static void write(const std::string& path, const std::string& content) {
    std::ofstream(path, std::ios::binary) << content;
  }

 private:
  static void set_mtime(const std::string& path, time_t t) {
    const timespec times[2] = {{t, 0}, {t, 0}};
    EXPECT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }
  void bind_socket(const std::string& path) {
    sock_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(path.size(), sizeof(addr.sun_path));
    path.copy(addr.sun_path, path.size());
    EXPECT_EQ(::bind(sock_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  }

  std::string root_, dir_;
  UniqueFd sock_;
};

struct PathCase {
  std::string rest;
  int status;  // 200: parses; 400 malformed; 404 too deep
  const char* folder = "";
  const char* file = "";
};

TEST(DumpPath, HostilePathsAreRefusedBeforeAnythingIsOpened) {
  const PathCase cases[] = {
      {"", 200, "", ""},
      {"/", 200, "", ""},
      {"/hang.json", 200, "", "hang.json"},
      {"/stacks-1/cpp_stack.svg", 200, "stacks-1", "cpp_stack.svg"},
      {"/a%2Db/c%2ejson", 200, "a-b", "c.json"},  // decoded once, then judged
      {"/..", 400},
      {"/../secret.txt", 400},
      {"/stacks-1/../../secret.txt", 400},
      {"/%2e%2e/secret.txt", 400},
      {"/%2E%2e", 400},
      {"/stacks-1/%2e%2e", 400},
      {"/.%2e/x", 400},
      {"/%252e%252e/x", 400},  // double encoding: "%2e%2e" is no name either
      {"/..%2fsecret.txt", 400},
      {"/stacks-1%2f..%2f..%2fsecret.txt", 400},
      {"/%2fetc%2fpasswd", 400},
      {"/.", 400},
      {"/./hang.json", 400},
      {"/.hidden", 400},
      {"/a\\..\\b", 400},
      {"/a%5c..%5cb", 400},
      {"/a%00b", 400},
      {std::string("/a\0b", 4), 400},
      {"/a%", 400},
      {"/a%4", 400},
      {"/a%zz", 400},
      {"/%c0%ae%c0%ae/x", 400},  // overlong UTF-8 dots
      {"/a b", 400},
      {"/a%20b", 400},
      {"//etc/passwd", 400},
      {"/x/", 400},
      {"/x//y", 400},
      {"x", 400},
      {"/etc/passwd/x", 404},
      {"/a/b/c", 404},
  };
  for (const PathCase& c : cases) {
    DumpPath p;
    std::string why;
    bool deep = false;
    const bool ok = parse_dump_path(c.rest, &p, &why, &deep);
    const int status = ok ? 200 : deep ? 404 : 400;
    EXPECT_EQ(status, c.status) << "'" << c.rest << "': " << why;
    if (ok) {
      EXPECT_EQ(p.folder, c.folder) << c.rest;
      EXPECT_EQ(p.file, c.file) << c.rest;
    } else {
      EXPECT_FALSE(why.empty()) << c.rest;
      EXPECT_EQ(why.find('\n'), std::string::npos) << c.rest;
    }
  }
  DumpPath p;
  std::string why;
  EXPECT_TRUE(parse_dump_path("/" + std::string(255, 'a'), &p, &why));
  EXPECT_FALSE(parse_dump_path("/" + std::string(256, 'a'), &p, &why));
}

TEST(DumpPath, OpenRefusesLinksFifosSocketsAndFolders) {
  DumpTree t;
  const auto open = [&](const char* folder, const char* file) {
    return open_dump_file(t.dir(), DumpPath{folder, file});
  };
  OpenedDumpFile f = open("", "hang.json");
  ASSERT_EQ(f.status, 200) << f.why;
  EXPECT_EQ(f.bytes, 14u);
  char buf[64] = {};
  EXPECT_EQ(::read(f.fd.get(), buf, sizeof(buf)), 14);
  EXPECT_EQ(std::string(buf), "{\"hung\":true}\n");
  EXPECT_EQ(::fcntl(f.fd.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);

  EXPECT_EQ(open("stacks-20261123-112233.456", "cpp_stack.svg").status, 200);
  struct Refusal {
    const char* folder;
    const char* file;
    int status;
    const char* why;
  };
  const Refusal refusals[] = {
      {"", "missing.json", 404, "not found: missing.json"},
      {"nofolder", "x", 404, "not found: nofolder"},
      {"", "link.txt", 403,
       "refused: link.txt is a symbolic link; only the dump folder's own "
       "files are served"},
      {"linkdir", "secret.txt", 403,
       "refused: linkdir is a symbolic link; only the dump folder's own files are served"},
      {"stacks-20261123-112233.456", "up.txt", 403,
       "refused: stacks-20261123-112233.456/up.txt is a symbolic link; only the dump folder's "
       "own files are served"},
      {"", "fifo", 403, "refused: fifo is not a regular file"},  // and did not block
      {"", "sock", 403, "refused: sock is not a regular file"},
      {"", "stacks-20261123-112233.456", 404,
       "stacks-20261123-112233.456 is a folder: GET /dumps lists its files"},
      {"hang.json", "x", 404, "not found: hang.json is not a folder"},
  };
  for (const Refusal& r : refusals) {
    const OpenedDumpFile o = open(r.folder, r.file);
    EXPECT_EQ(o.status, r.status) << r.folder << "/" << r.file;
    EXPECT_EQ(o.why, r.why);
    EXPECT_FALSE(o.fd.valid());
  }
  // A device, where this user may make one (root): refused without opening it.
  if (::mknod((t.dir() + "/null").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0) {
    EXPECT_EQ(open("", "null").why, "refused: null is not a regular file");
  }
}

TEST(DumpRoutes, ListingHoldsPlainRegularFilesAndFoldersNewestFirst) {
  DumpTree t;
  const nlohmann::json doc = dump_listing(t.dir());
  const nlohmann::json expected = {
      {"dump_dir", t.dir()},
      {"folders",
       {{{"name", "stacks-20261123-112233.456"},
         {"mtime_unix", 1'700'000'100},
         {"files",
          {{{"name", "00000-00002.stacktrace"}, {"bytes", 16}},
           {{"name", "cpp_stack.svg"}, {"bytes", 29}}}}},
        {{"name", "timeline-20261123-112240.000-hang"},
         {"mtime_unix", 1'700'000'000},
         {"files",
          {{{"name", "00000-00002.timeline"}, {"bytes", 7}},
           {{"name", "timeline.json"}, {"bytes", 18}}}}}}},
      {"files",
       {{{"name", "hang.json"}, {"bytes", 14}}, {{"name", "supervisor.log"}, {"bytes", 9}}}}};
  EXPECT_EQ(doc, expected) << doc.dump(2);
  EXPECT_THROW(dump_listing(t.dir() + "/none"), std::runtime_error);
}

TEST(DumpRoutes, ContentTypeByExtensionElseByContent) {
  DumpTree t;
  DumpTree::write(t.dir() + "/notes", "plain words\n");
  DumpTree::write(t.dir() + "/blob", std::string("\x7f"
                                                 "ELF\0\0",
                                                 6));
  const auto type = [&](const std::string& name) {
    const UniqueFd fd(::open((t.dir() + "/" + name).c_str(), O_RDONLY | O_CLOEXEC));
    return dump_content_type(name, fd.get());
  };
  EXPECT_EQ(type("hang.json"), "application/json");
  EXPECT_EQ(type("supervisor.log"), "text/plain; charset=utf-8");
  EXPECT_EQ(type("notes"), "text/plain; charset=utf-8");
  EXPECT_EQ(type("blob"), "application/octet-stream");
  EXPECT_EQ(type("timeline-20261123-112240.000-hang/00000-00002.timeline"),
            "application/octet-stream");
  EXPECT_EQ(type("stacks-20261123-112233.456/cpp_stack.svg"), "image/svg+xml");
  EXPECT_EQ(type("stacks-20261123-112233.456/00000-00002.stacktrace"), "text/plain; charset=utf-8");
}

// The header field `name` of a reply's head ("" when absent).
std::string field(const testing::HttpReply& r, const std::string& name) {
  const size_t at = r.head.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  const size_t from = at + name.size() + 4;
  return r.head.substr(from, r.head.find("\r\n", from) - from);
}

class DumpRoutesOverHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpHandlers h{[] { return std::string("{}"); }, [] { return std::string("[]"); },
                   [] { return std::string(""); }};
    h.dumps = [routes = DumpRoutes(tree_.dir())](const std::string& target) {
      return routes.answer(target);
    };
    server_ = std::make_unique<HttpServer>(std::move(h));
    std::string error;
    ASSERT_TRUE(server_->start("127.0.0.1", 0, &error)) << error;
  }
  testing::HttpReply get(const std::string& path, const std::string& method = "GET") {
    const auto r = testing::http_request(server_->port(), method, path);
    return r ? *r : testing::HttpReply{};
  }

  DumpTree tree_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(DumpRoutesOverHttp, ServesListingAndFilesWithTheirHeaders) {
  testing::HttpReply r = get("/dumps");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(field(r, "Content-Type"), "application/json");
  EXPECT_EQ(nlohmann::json::parse(r.body), dump_listing(tree_.dir()));
  EXPECT_EQ(get("/dumps/").body, r.body);

  r = get("/dumps/stacks-20261123-112233.456/cpp_stack.svg");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "<svg><script>1</script></svg>");
  EXPECT_EQ(field(r, "Content-Type"), "image/svg+xml");
  EXPECT_EQ(field(r, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(field(r, "Content-Security-Policy"),
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'");

  r = get("/dumps/hang.json?cache=1");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"hung\":true}\n");
  EXPECT_EQ(field(r, "Content-Security-Policy"), "");

  r = get("/dumps/timeline-20261123-112240.000-hang/00000-00002.timeline");
  EXPECT_EQ(r.body, std::string("XPUR\0\x01\x02", 7));
  EXPECT_EQ(field(r, "Content-Type"), "application/octet-stream");
  EXPECT_EQ(field(r, "Content-Disposition"), "attachment; filename=\"00000-00002.timeline\"");

  r = get("/dumps/hang.json", "HEAD");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(field(r, "Content-Length"), "14");
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(get("/dumps/hang.json", "POST").status, 405);
}

// A trace of many MB goes out whole, byte for byte, streamed from its file.
TEST_F(DumpRoutesOverHttp, StreamsALargeFileWhole) {
  std::string big(24 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + (i * 7919) % 26);
  DumpTree::write(tree_.dir() + "/timeline-20261123-112240.000-hang/big.json", big);
  const testing::HttpReply r = get("/dumps/timeline-20261123-112240.000-hang/big.json");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(field(r, "Content-Length"), std::to_string(big.size()));
  EXPECT_TRUE(r.body == big) << r.body.size() << " bytes of " << big.size();
}

TEST_F(DumpRoutesOverHttp, RefusesWhatIsNotADumpFile) {
  const std::pair<const char*, int> cases[] = {
      {"/dumps/../secret.txt", 400},
      {"/dumps/%2e%2e/secret.txt", 400},
      {"/dumps/%2E%2E%2Fsecret.txt", 400},
      {"/dumps/%252e%252e/secret.txt", 400},
      {"/dumps/..%5csecret.txt", 400},
      {"/dumps/link.txt", 403},
      {"/dumps/linkdir/secret.txt", 403},
      {"/dumps/stacks-20261123-112233.456/up.txt", 403},
      {"/dumps/fifo", 403},
      {"/dumps/sock", 403},
      {"/dumps/missing.json", 404},
      {"/dumps/a/b/c", 404},
  };
  for (const auto& [path, status] : cases) {
    const testing::HttpReply r = get(path);
    EXPECT_EQ(r.status, status) << path << ": " << r.body;
    EXPECT_EQ(r.body.find("the secret"), std::string::npos) << path;
  }
}

TEST_F(DumpRoutesOverHttp, PerfettoPageHandsTheTraceOverFromTheBrowser) {
  const testing::HttpReply r =
      get("/dumps/timeline-20261123-112240.000-hang/timeline.json?perfetto");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(field(r, "Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(field(r, "Content-Security-Policy"),
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'");
  EXPECT_EQ(field(r, "Referrer-Policy"), "no-referrer");
  EXPECT_EQ(field(r, "Cross-Origin-Opener-Policy"), "");  // would cut the tab's opener
  for (const char* part :
       {"const FILE = \"/dumps/timeline-20261123-112240.000-hang/timeline.json\";",
        "window.open(PERFETTO)", "win.postMessage(\"PING\", PERFETTO)", "e.data !== \"PONG\"",
        "win.postMessage({perfetto: {buffer: buffer, title: NAME, fileName: NAME}}, PERFETTO)"}) {
    EXPECT_NE(r.body.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(get("/dumps/timeline-20261123-112240.000-hang/none.json?perfetto").status, 404);
}

// The Perfetto page's script run in node against stand-ins of the browser:
// a click opens https://ui.perfetto.dev, reads the trace from this server,
// PINGs the tab until it answers PONG (a PONG from another origin does not
// count), then posts {perfetto: {buffer, title, fileName}} to Perfetto's
// origin only.
TEST(DumpRoutes, PerfettoPageFollowsPerfettosPostMessageProtocol) {
  if (::access("/usr/bin/node", X_OK) != 0) {
    GTEST_SKIP() << "/usr/bin/node not installed (scripts/install_deps.sh): page script not run";
  }
  const std::string page = perfetto_page("timeline-1/timeline.json");
  const size_t from = page.find("<script>\n") + 9;
  const std::string script = page.substr(from, page.find("</script>") - from);
  const std::string browser = R"js(
const elements = {};
const el = (id) => elements[id] || (elements[id] = {
  textContent: "", handlers: {}, addEventListener(t, f) { this.handlers[t] = f; } });
globalThis.document = { getElementById: el };
const listeners = [];
const deliver = (origin) => listeners.slice().forEach(
    (f) => f({ source: tab, origin: origin, data: "PONG" }));
const seen = { opened: null, fetched: null, pings: 0 };
const tab = { postMessage(data, origin) {
  if (data === "PING") {
    if (origin !== "https://ui.perfetto.dev") throw new Error("PING to " + origin);
    if (++seen.pings === 1) setTimeout(() => deliver("https://evil.example"), 0);
    if (seen.pings === 3) setTimeout(() => deliver("https://ui.perfetto.dev"), 0);
    return;
  }
  const p = data.perfetto;
  seen.posted = { keys: Object.keys(p).sort(), bytes: p.buffer.byteLength, title: p.title,
                  fileName: p.fileName, origin: origin, pings: seen.pings };
  setTimeout(() => { seen.status = el("status").textContent; seen.listeners = listeners.length;
                     console.log(JSON.stringify(seen)); process.exit(0); }, 0);
} };
globalThis.window = {
  open(url) { seen.opened = url; return tab; },
  addEventListener(t, f) { if (t === "message") listeners.push(f); },
  removeEventListener(t, f) { listeners.splice(listeners.indexOf(f), 1); } };
globalThis.fetch = async (url) => { seen.fetched = url;
  return { ok: true, status: 200, arrayBuffer: async () => new Uint8Array(5).buffer }; };
setTimeout(() => { console.log("no handover within 30 s"); process.exit(1); }, 30000);
)js";
  char tmpl[] = "/tmp/xpu_perfetto_page_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  DumpTree::write(dir + "/page.js", browser + script + "\nel(\"open\").handlers.click();\n");
  FILE* node = ::popen(("/usr/bin/node " + dir + "/page.js 2>&1").c_str(), "r");
  ASSERT_NE(node, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), node)) > 0;) out.append(buf, n);
  EXPECT_EQ(::pclose(node), 0) << out;
  fs::remove_all(dir);
  const nlohmann::json seen = nlohmann::json::parse(out, nullptr, false);
  const nlohmann::json expected = {{"opened", "https://ui.perfetto.dev"},
                                   {"fetched", "/dumps/timeline-1/timeline.json"},
                                   {"pings", 3},
                                   {"posted",
                                    {{"keys", {"buffer", "fileName", "title"}},
                                     {"bytes", 5},
                                     {"title", "timeline.json"},
                                     {"fileName", "timeline.json"},
                                     {"origin", "https://ui.perfetto.dev"},
                                     {"pings", 3}}},
                                   {"status", "Handed to Perfetto UI."},
                                   {"listeners", 0}};
  EXPECT_EQ(seen, expected) << out;
}

}  // namespace
}  // namespace xpu_timer::supervisor
