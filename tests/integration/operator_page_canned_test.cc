// The operator page (GET /) in headless Chromium, over documents no 2-core
// machine can produce for real: a hang of 1,024 ranks, names that hold
// markup, a supervisor without GET /dumps and one that stops answering. The
// documents are the supervisor's own, made by its code (synthetic_hang.h:
// the hang detector over a synthetic 1,024-rank snapshot, hang_document_text,
// ranks_json, overview_json), the flame graph is the viewer's over a
// synthetic dump of as many ranks, and the page is the route's; a stand-in
// server (canned_supervisor.py) serves them at the supervisor's paths. The
// real supervisor's page is tested in operator_page_e2e_test.cc. Screenshots
// go to build/test-artifacts/operator-page. Skipped where Chromium is missing.
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flamegraph/bench/synthetic_dump.h"
#include "flamegraph/chromium_driver.h"
#include "flamegraph/dump_merger.h"
#include "flamegraph/flamegraph_files.h"
#include "supervisor/analysis/overview_json.h"
#include "supervisor/analysis/synthetic_hang.h"
#include "supervisor/http/http_routes.h"
#include "tests/integration/page_dom.h"
#include "tests/integration/process_harness.h"

namespace xpu_timer::testing {
namespace {

using nlohmann::json;
using supervisor::synthetic_spec;
using supervisor::SyntheticDocuments;
using supervisor::SyntheticHangSpec;

constexpr char kStacks[] = "stacks-20261130-120304";
constexpr char kTimeline[] = "timeline-20261130-120303-hang";

// The supervisor-like server and the files it serves.
class CannedSupervisor {
 public:
  explicit CannedSupervisor(const flamegraph::TestFolder& dir) : dir_(dir) {
    serve("/", "text/html; charset=utf-8", "index.html",
          supervisor::route_request(supervisor::HttpHandlers{}, "GET", "/").body);
  }
  // `path` answers `body` (with 503 after `fail_after` answers when set).
  void serve(const std::string& path, const std::string& type, const std::string& name,
             const std::string& body, std::optional<int> fail_after = std::nullopt) {
    manifest_[path] = {{"type", type}, {"file", dir_.write("served-" + name, body)}};
    if (fail_after) manifest_[path]["fail_after"] = *fail_after;
  }
  void serve_json(const std::string& path, const json& doc,
                  std::optional<int> fail_after = std::nullopt) {
    serve(path, "application/json", path.substr(1), doc.dump(2), fail_after);
  }
  // Every file of dump folder `folder` at /dumps/<folder>/<file>, and its listing entry.
  json serve_folder(const std::string& path, const std::string& folder) {
    json files = json::array();
    for (const auto& f : std::filesystem::directory_iterator(path)) {
      const std::string name = f.path().filename().string();
      manifest_["/dumps/" + folder + "/" + name] = {{"type", type_of(name)},
                                                    {"file", f.path().string()}};
      files.push_back({{"name", name}, {"bytes", std::filesystem::file_size(f.path())}});
    }
    return {{"name", folder}, {"mtime_unix", std::time(nullptr) - 60}, {"files", files}};
  }
  // Starts the server; its port.
  int start() {
    const std::string manifest = dir_.write("manifest.json", manifest_.dump());
    ChildOptions options;
    options.ready_fd = 3;
    server_ = Child::start({python3(), source_dir() + "/tests/integration/canned_supervisor.py",
                            manifest, "{ready_fd}"},
                           {}, options);
    const std::string line = server_->wait_ready_line(std::chrono::seconds(30));
    EXPECT_FALSE(line.empty()) << server_->output();
    return line.empty() ? 0 : std::stoi(line);
  }

 private:
  static std::string type_of(const std::string& name) {
    if (name.size() > 4 && name.substr(name.size() - 4) == ".svg") return "image/svg+xml";
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") return "application/json";
    return "text/plain; charset=utf-8";
  }
  const flamegraph::TestFolder& dir_;
  json manifest_ = json::object();
  std::unique_ptr<Child> server_;
};

// The hang's stack folder as the supervisor's dumper leaves it: the ranks'
// stack files, hang.json and the viewer's flame graphs.
std::string stack_folder(const flamegraph::TestFolder& dir, int world, int leak_rank,
                         const json& hang) {
  const std::string path = dir.path() + "/" + kStacks;
  std::filesystem::create_directories(path);
  flamegraph::SyntheticDumpSpec spec;
  spec.world_size = world;
  spec.threads_per_rank = 4;
  spec.leak_rank = leak_rank;
  std::string error, warning;
  EXPECT_TRUE(flamegraph::write_synthetic_dump(path, spec, &error)) << error;
  std::ofstream(path + "/hang.json") << hang.dump(2);
  flamegraph::DumpMerge dump;
  EXPECT_TRUE(flamegraph::merge_dump(path, flamegraph::MergeOptions{}, &dump, &error)) << error;
  std::vector<std::string> written;
  EXPECT_TRUE(flamegraph::write_flamegraphs(dump.merged, path, &written, &error,
                                            flamegraph::find_hang_verdict(path, &warning)))
      << error;
  return path;
}

// Serves a whole job: the documents, the config, the dump folder.
int serve_job(const flamegraph::TestFolder& dir, CannedSupervisor* server,
              const SyntheticDocuments& docs, const std::string& stacks_folder_name,
              const std::string& stacks_path) {
  server->serve_json("/hang", docs.hang);
  server->serve_json("/ranks", docs.ranks);
  server->serve_json("/slow", docs.slow);
  server->serve_json("/overview", supervisor::overview_json(docs.hang, docs.ranks, docs.slow));
  server->serve_json(
      "/config",
      {{"hang_timeout_s", 300}, {"stall_factor", 3}, {"slow_window_s", 30}, {"on_hang", "keep"}});
  const std::string timeline = dir.path() + "/" + kTimeline;
  std::filesystem::create_directories(timeline);
  std::ofstream(timeline + "/rank-00000.ring") << "ring";
  std::ofstream(dir.path() + "/supervisor.log") << "log\n";
  server->serve("/dumps/supervisor.log", "text/plain", "supervisor.log", "log\n");
  server->serve_json("/dumps", {{"dump_dir", "/var/xpu-timer/job-17"},
                                {"files", {{{"name", "supervisor.log"}, {"bytes", 4}}}},
                                {"folders",
                                 {server->serve_folder(stacks_path, stacks_folder_name),
                                  server->serve_folder(timeline, kTimeline)}}});
  return server->start();
}

TEST(OperatorPageCanned, ThousandRanksFoldIntoTwoGroupsUnderTheVerdictAndItsRoot) {
  XPU_TIMER_SKIP_WITHOUT_CHROMIUM();
  flamegraph::TestFolder dir;
  SyntheticHangSpec spec = synthetic_spec(1024, 513);
  spec.stacks_dir = "/var/xpu-timer/job-17/" + std::string(kStacks);
  const SyntheticDocuments docs = supervisor::synthetic_hang(spec);
  CannedSupervisor server(dir);
  const int port = serve_job(dir, &server, docs, kStacks, stack_folder(dir, 1024, 513, docs.hang));
  ASSERT_GT(port, 0);

  const std::string dom = page_dom(dir, port);
  EXPECT_EQ(element_text(dom, "verdict-word"), "HANG") << dom.substr(0, 3000);
  EXPECT_NE(element_text(dom, "verdict-summary").find("rank 513 missing"), std::string::npos)
      << element_text(dom, "verdict-summary");
  const std::string roots = element_text(dom, "roots");
  EXPECT_NE(roots.find("The others wait on rank 513"), std::string::npos) << roots;
  EXPECT_NE(roots.find("rank 513 missing (behind) · node 64 · host node-64"), std::string::npos)
      << roots;
  EXPECT_NE(roots.find("in stuck_in_host_code (sim_trainer.py:88) ← train_step (train.py:42)"),
            std::string::npos)
      << roots;
  EXPECT_NE(roots.find("1,023 ranks wait on it"), std::string::npos) << roots;
  EXPECT_EQ(count_class(dom, "group"), 2u);
  const std::string groups = element_text(dom, "groups");
  EXPECT_NE(groups.find("1,023 ranks stuck · in AllReduce #812 on world · step 40 · waiting 5 min"),
            std::string::npos)
      << groups;
  EXPECT_NE(groups.find("ranks 0-512/514-1023 · nodes 0-127"), std::string::npos) << groups;
  EXPECT_NE(groups.find("1 rank missing (behind) · last AllReduce #811 on world"),
            std::string::npos)
      << groups;
  EXPECT_EQ(element_text(dom, "ranks-head"), "1,024 ranks expected, 1,024 registered");
  EXPECT_EQ(element_text(dom, "config"),
            "hang timeout 5 min · stall after ×3 · straggler window 30 s · on hang: keep");
  // The flame graph loaded inline, captioned with its own title; every dump linked.
  EXPECT_EQ(element_attribute(dom, "flame-frame", "data-loaded"), "svg") << dom.substr(0, 3000);
  EXPECT_EQ(element_attribute(dom, "flame-frame", "src"),
            "/dumps/" + std::string(kStacks) + "/mixed_stack.svg");
  EXPECT_NE(element_text(dom, "flame-caption").find("rank 513 missing"), std::string::npos)
      << element_text(dom, "flame-caption");
  EXPECT_EQ(count_of(dom, "href=\"/dumps/" + std::string(kStacks) + "/"),
            1024 + 7 + 1 + 3);  // stack files, hang.json, 6 outputs; "open alone"; 3 tabs
  EXPECT_NE(dom.find("href=\"/dumps/" + std::string(kTimeline) + "/rank-00000.ring\""),
            std::string::npos);
  EXPECT_NE(dom.find("href=\"/dumps/supervisor.log\""), std::string::npos);
  // It refreshed itself: the first poll and at least one more.
  EXPECT_GE(polls_of(dom), 2);
  const std::string shot = page_screenshot(dir, port, "operator-page-1024-ranks.png", 1200, 1400);
  EXPECT_FALSE(shot.empty());
}

// Measures the page as a phone shows it: it loads "/" in a 390 x 844 frame of
// the same origin and writes what it measured, as JSON, into <pre id="out">.
const char kPhonePage[] = R"(<html><body style="margin:0">
<iframe id="p" src="/" style="width:390px;height:844px;border:0"></iframe>
<pre id="out"></pre><script>
function measure() {
  var d = document.getElementById("p").contentDocument;
  var frame = d && d.getElementById("flame-frame");
  if (!d || !d.body || !frame || !frame.getAttribute("data-loaded")) {
    setTimeout(measure, 100);
    return;
  }
  function box(el) { var b = el.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; }
  var r = { width: d.documentElement.clientWidth, scrollWidth: d.documentElement.scrollWidth,
            wide: [] };
  d.querySelectorAll("body *").forEach(function (e) {
    var b = e.getBoundingClientRect();
    if (b.width > 0 && b.right > r.width + 0.5) {
      r.wide.push(e.tagName + "#" + e.id + "." + e.className + ": " + e.textContent.slice(0, 60));
    }
  });
  r.word = box(d.getElementById("verdict-word"));
  r.root = box(d.querySelector(".root .culprit"));
  r.summaryPx = parseFloat(getComputedStyle(d.getElementById("verdict-summary")).fontSize);
  r.groupPx = parseFloat(getComputedStyle(d.querySelector(".group")).fontSize);
  r.badge = box(d.querySelector(".group .badge"));
  r.groupText = box(d.querySelector(".group .count"));
  r.flame = box(frame);
  document.getElementById("out").textContent = JSON.stringify(r);
  setTimeout(measure, 500);
}
window.addEventListener("load", measure);
</script></body></html>)";

TEST(OperatorPageCanned, OnAPhoneTheVerdictAndRootAreOnTheFirstScreenAndNothingIsWider) {
  XPU_TIMER_SKIP_WITHOUT_CHROMIUM();
  flamegraph::TestFolder dir;
  const SyntheticDocuments docs = supervisor::synthetic_hang(supervisor::synthetic_spec(1024, 513));
  CannedSupervisor server(dir);
  server.serve("/phone.html", "text/html", "phone.html", kPhonePage);
  const int port = serve_job(dir, &server, docs, kStacks, stack_folder(dir, 1024, 513, docs.hang));
  ASSERT_GT(port, 0);
  const json m =
      json::parse(element_text(page_dom(dir, port, "/phone.html"), "out"), nullptr, false);
  ASSERT_TRUE(m.is_object()) << "the phone page measured nothing";
  constexpr double kWidth = 390, kHeight = 844;
  EXPECT_EQ(m["width"], kWidth) << m.dump();
  EXPECT_LE(m["scrollWidth"].get<double>(), kWidth) << m.dump();  // no sideways scrolling
  EXPECT_TRUE(m["wide"].empty()) << m.dump();
  // The verdict and the root's line, readable, without scrolling.
  EXPECT_LE(m["word"][3].get<double>(), kHeight) << m.dump();
  EXPECT_LE(m["root"][3].get<double>(), kHeight) << m.dump();
  EXPECT_GE(m["summaryPx"].get<double>(), 14) << m.dump();
  EXPECT_GE(m["groupPx"].get<double>(), 14) << m.dump();
  // Narrow: a group's badge stacks above its text instead of beside it.
  EXPECT_LE(m["badge"][3].get<double>(), m["groupText"][1].get<double>()) << m.dump();
  EXPECT_LE(m["flame"][2].get<double>(), kWidth) << m.dump();
  EXPECT_FALSE(page_screenshot(dir, port, "operator-page-phone.png", 390, 844).empty());
}

// Names that come from the job (communicators, hosts, Python functions and
// files, crash and straggler sentences, dump files) hold markup: the page
// shows each as text, creates no element from it and runs none of it.
TEST(OperatorPageCanned, MarkupInNamesIsShownAsText) {
  XPU_TIMER_SKIP_WITHOUT_CHROMIUM();
  flamegraph::TestFolder dir;
  const std::string pwn = "document.body.setAttribute('data-pwned',1)";
  SyntheticHangSpec spec = synthetic_spec(4, 2);
  spec.comm_name = "<img src=x onerror=alert(1)>";
  spec.host_prefix = "<b>h</b>&\"'";
  spec.where = {CodeFrame{"<img src=x onerror=" + pwn + ">", "/job/a<b>&\"c.py", 7, true}};
  spec.crashed_ranks = {1};
  spec.crash_summary = "<svg onload=" + pwn + ">";
  SyntheticDocuments docs = supervisor::synthetic_hang(spec);
  docs.slow["stragglers"] =
      json::array({{{"rank", 3}, {"summary", "<script>" + pwn + "</script>"}}});
  docs.hang["mismatch_total"] = 1;
  docs.hang["mismatches"] = json::array({{{"summary", "<iframe src=javascript:" + pwn + ">"}}});
  const std::string folder = "stacks-<img src=x onerror=" + pwn + ">";
  CannedSupervisor server(dir);
  const int port = serve_job(dir, &server, docs, folder, stack_folder(dir, 4, 2, docs.hang));
  ASSERT_GT(port, 0);
  const std::string dom = page_dom(dir, port);
  ASSERT_FALSE(dom.empty());
  EXPECT_GE(polls_of(dom), 1);
  EXPECT_EQ(dom.find("data-pwned=\""), std::string::npos);  // no payload ran
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_EQ(dom.find("<svg"), std::string::npos);
  EXPECT_EQ(dom.find("<b>h</b>"), std::string::npos);
  EXPECT_EQ(count_of(dom, "<script"), 1u);  // the page's own
  EXPECT_EQ(count_of(dom, "<iframe"), 1u);  // the flame graph's
  // Each shown as the text it is.
  EXPECT_NE(element_text(dom, "verdict-summary").find("(<img src=x onerror=alert(1)>)"),
            std::string::npos)
      << element_text(dom, "verdict-summary");
  const std::string roots = element_text(dom, "roots");
  EXPECT_NE(roots.find("host <b>h</b>&\"'0"), std::string::npos) << roots;
  EXPECT_NE(roots.find("in <img src=x onerror=" + pwn + "> (a<b>&\"c.py:7)"), std::string::npos)
      << roots;
  const std::string findings = element_text(dom, "findings");
  EXPECT_NE(findings.find("Crash: rank 1 (<b>h</b>&\"'0) crashed: <svg onload="), std::string::npos)
      << findings;
  EXPECT_NE(findings.find("Mismatch: <iframe src=javascript:"), std::string::npos) << findings;
  EXPECT_NE(findings.find("Straggler: <script>"), std::string::npos) << findings;
  EXPECT_NE(element_text(dom, "groups").find("on <img src=x onerror=alert(1)>"), std::string::npos);
  // The folder's links are its name percent-encoded, and the graph loads through them.
  const std::string encoded =
      "/dumps/stacks-%3Cimg%20src%3Dx%20onerror%3Ddocument.body.setAttribute('data-pwned'%2C1)%3E";
  EXPECT_EQ(element_attribute(dom, "flame-frame", "src"), encoded + "/mixed_stack.svg");
  EXPECT_EQ(element_attribute(dom, "flame-frame", "data-loaded"), "svg");
  EXPECT_NE(element_text(dom, "dumps-body").find(folder), std::string::npos);
}

// Before GET /dumps and GET /config existed (404) the page says so and shows
// the rest; when the supervisor stops answering it says since when, and keeps
// what it last showed.
TEST(OperatorPageCanned, WithoutDumpsListingAndWhenTheSupervisorStopsAnswering) {
  XPU_TIMER_SKIP_WITHOUT_CHROMIUM();
  flamegraph::TestFolder dir;
  const SyntheticDocuments docs = supervisor::synthetic_hang(supervisor::synthetic_spec(4, 2));
  CannedSupervisor server(dir);
  server.serve_json("/overview", supervisor::overview_json(docs.hang, docs.ranks, docs.slow),
                    /*fail_after=*/1);
  const int port = server.start();
  ASSERT_GT(port, 0);
  const std::string dom = page_dom(dir, port);
  EXPECT_EQ(element_text(dom, "verdict-word"), "HANG") << dom.substr(0, 3000);
  EXPECT_NE(element_text(dom, "roots").find("rank 2"), std::string::npos);
  EXPECT_EQ(count_class(dom, "group"), 2u);
  EXPECT_EQ(element_text(dom, "flame-none"),
            "no dumps listing: this supervisor does not serve GET /dumps");
  EXPECT_EQ(element_text(dom, "dumps-none"),
            "no dumps listing: this supervisor does not serve GET /dumps");
  EXPECT_EQ(element_text(dom, "config"), "hang timeout 5 min");  // from the hang document
  const std::string error = element_text(dom, "error");
  EXPECT_EQ(error.rfind(
                "The supervisor is not answering: /overview: HTTP 503 (what is shown is from ", 0),
            0u)
      << error;
  EXPECT_EQ(element_attribute(dom, "error", "class"), "shown");
  EXPECT_GE(polls_of(dom), 2);
}

}  // namespace
}  // namespace xpu_timer::testing
