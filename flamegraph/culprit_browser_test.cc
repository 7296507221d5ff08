// The culprit panel in a real browser, at 4 ranks and at 1,024: headless
// Chromium shows the mixed graph the viewer writes for a synthetic hang (one
// rank missing in stuck_in_host_code while the others wait in ncclAllReduce)
// in a 1200 x 900 frame, and a script in the page measures what it rendered:
// the culprit's frame in the panel is at least kMinCulpritWidth px wide and
// on the first screen, its text is the whole `func@file:line` inside its box,
// the title names the verdict, and a search for the culprit's function
// highlights its panel frame and says how many ranks match. The same frame in
// the graph itself is a sliver at 1,024 ranks: that is what the panel is for.
// Screenshots are left in the build's test-artifacts/flamegraph folder.
// Skipped where chromium is missing.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/hang_document.h"
#include "flamegraph/bench/synthetic_dump.h"
#include "flamegraph/chromium_driver.h"
#include "flamegraph/culprit_panel.h"
#include "flamegraph/dump_merger.h"
#include "flamegraph/flamegraph_files.h"
#include "flamegraph/test_folder.h"

namespace xpu_timer::flamegraph {
namespace {

constexpr int kFrameWidth = 1200, kFrameHeight = 900;
constexpr char kCulpritLabel[] = "stuck_in_host_code@/job/sim_trainer.py:88";

// A hang as the supervisor writes it, through the document's one writer:
// `missing` missing, `unresponsive` unresponsive, every other rank stuck.
std::string hang_json(int world, int missing, int unresponsive) {
  hang_document::Document doc;
  doc.hung = true;
  doc.summary = "ranks stuck in AllReduce #6 on comm 06543c4e36ee6c61; rank " +
                std::to_string(missing) + " missing";
  for (int r = 0; r < world; ++r) {
    hang_document::Rank rank;
    rank.rank = r;
    rank.state = r == missing ? "missing" : r == unresponsive ? "unresponsive" : "stuck";
    doc.ranks.push_back(rank);
  }
  return hang_document::to_text(doc);
}

struct Graph {
  std::string svg_path;
  size_t svg_bytes = 0;
  size_t main_frames = 0;    // <g class="f"> of the mixed view
  size_t panel_frames = 0;   // <g class="cf">
  double seconds = 0;        // merge + render, as the viewer does it
};

// Writes the dump and hang.json into dir, then does what the viewer does.
Graph viewer_output(const TestFolder& dir, const SyntheticDumpSpec& spec, int unresponsive) {
  Graph g;
  std::string error;
  EXPECT_TRUE(write_synthetic_dump(dir.path(), spec, &error)) << error;
  dir.write("hang.json", hang_json(spec.world_size, spec.leak_rank, unresponsive));
  const auto start = std::chrono::steady_clock::now();
  DumpMerge dump;
  EXPECT_TRUE(merge_dump(dir.path(), MergeOptions{}, &dump, &error)) << error;
  std::string warning;
  const std::optional<HangVerdict> verdict = find_hang_verdict(dir.path(), &warning);
  EXPECT_TRUE(verdict) << warning;
  std::vector<std::string> written;
  EXPECT_TRUE(write_flamegraphs(dump.merged, dir.path(), &written, &error, verdict)) << error;
  g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  g.svg_path = dir.path() + "/mixed_stack.svg";
  const std::string svg = TestFolder::read(g.svg_path);
  g.svg_bytes = svg.size();
  g.main_frames = dump.merged.view(View::kMixed).nodes.size();
  for (size_t at = svg.find("<g class=\"cf"); at != std::string::npos;
       at = svg.find("<g class=\"cf", at + 1)) {
    ++g.panel_frames;
  }
  return g;
}

// The page that shows the graph in a frame and writes what it measured, as
// JSON, into <pre id="out"> for the DOM dump.
const char kMeasurePage[] = R"(<html><body style="margin:0">
<iframe id="g" src="mixed_stack.svg" style="width:WIDTHpx;height:HEIGHTpx;border:0"></iframe>
<pre id="out"></pre><script>
window.addEventListener("load", function () {
  var frame = document.getElementById("g"), d = frame.contentDocument, w = frame.contentWindow;
  function box(el) { var b = el.getBoundingClientRect(); return [b.left, b.top, b.width, b.height]; }
  var r = {}, cfs = d.getElementsByClassName("cf"), culprit = null;
  for (var i = 0; i < cfs.length && !culprit; i++) {
    var name = cfs[i].getElementsByTagName("title")[0].textContent.split("\n")[0];
    if (name.indexOf("LABEL@") === 0) culprit = cfs[i];
  }
  r.found = !!culprit;
  if (culprit) {
    var text = culprit.getElementsByTagName("text")[0];
    r.rect = box(culprit.getElementsByTagName("rect")[0]);
    r.text = box(text);
    r.label = text.textContent;
    r.main = box(d.getElementById(culprit.getAttribute("data-node")).getElementsByTagName("rect")[0]);
  }
  r.title = d.getElementById("title").textContent;
  r.titleBox = box(d.getElementById("title"));
  r.elements = d.getElementsByTagName("*").length;
  w.search("stuck_in_host_code");
  r.matched = d.getElementById("matched").textContent;
  r.matchedBox = box(d.getElementById("matched"));
  r.panelHits = d.querySelectorAll("g.cf[data-hl]").length;
  r.culpritFill = culprit ? culprit.getElementsByTagName("rect")[0].getAttribute("fill") : "";
  document.getElementById("out").textContent = JSON.stringify(r);
});
</script></body></html>)";

nlohmann::json measure(const TestFolder& dir) {
  std::string page = kMeasurePage;
  for (const auto& [key, value] :
       {std::pair<std::string, std::string>{"WIDTH", std::to_string(kFrameWidth)},
        {"HEIGHT", std::to_string(kFrameHeight)},
        {"LABEL", kCulpritLabel}}) {
    page.replace(page.find(key), key.size(), value);
  }
  const std::string url = "file://" + dir.write("page.html", page);
  const std::string dom = chromium_dom(dir, url, "--allow-file-access-from-files");
  const size_t open = dom.find("<pre id=\"out\">"), close = dom.find("</pre>");
  if (open == std::string::npos || close == std::string::npos) {
    ADD_FAILURE() << "the page wrote no measurement: " << dom.substr(0, 2000);
    return {};
  }
  std::string text = dom.substr(open + 14, close - open - 14);
  for (const auto& [entity, c] : {std::pair<std::string, std::string>{"&lt;", "<"},
                                  {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}}) {
    for (size_t at = text.find(entity); at != std::string::npos; at = text.find(entity, at + 1)) {
      text.replace(at, entity.size(), c);
    }
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) ADD_FAILURE() << "not JSON: " << text;
  return j;
}

// What must hold at any scale; `title` and `matched` are the exact texts.
void expect_culprit_visible(const nlohmann::json& m, const std::string& title,
                            const std::string& matched) {
  ASSERT_TRUE(m.value("found", false)) << m.dump();
  const auto& rect = m["rect"];
  const auto& text = m["text"];
  // Wide enough for the whole label, and on the first screen, unscrolled.
  EXPECT_GE(rect[2].get<double>(), kMinCulpritWidth) << m.dump();
  EXPECT_GE(rect[1].get<double>(), 0) << m.dump();
  EXPECT_LE(rect[1].get<double>() + rect[3].get<double>(), kFrameHeight) << m.dump();
  // The whole label, its box inside the frame's box: nothing cut or hidden.
  EXPECT_EQ(m["label"], kCulpritLabel);
  EXPECT_GE(text[0].get<double>(), rect[0].get<double>()) << m.dump();
  EXPECT_LE(text[0].get<double>() + text[2].get<double>(),
            rect[0].get<double>() + rect[2].get<double>())
      << m.dump();
  EXPECT_GT(text[2].get<double>(), 0) << m.dump();
  // The title names the verdict and fits the window.
  EXPECT_EQ(m["title"], title);
  EXPECT_GE(m["titleBox"][0].get<double>(), 0) << m.dump();
  EXPECT_LE(m["titleBox"][0].get<double>() + m["titleBox"][2].get<double>(), kFrameWidth);
  // The search highlights the culprit's frame in the panel and counts ranks.
  EXPECT_EQ(m["matched"], matched);
  EXPECT_EQ(m["panelHits"], 1);
  EXPECT_EQ(m["culpritFill"], "rgb(230,0,230)");
  EXPECT_GE(m["matchedBox"][0].get<double>(), 0) << m.dump();
}

TEST(CulpritBrowser, FourRanksTheMissingRankIsLabelledInFullAndFoundBySearch) {
  XPU_TIMER_SKIP_WITHOUT_CHROMIUM();
  TestFolder dir;
  SyntheticDumpSpec spec;
  spec.world_size = 4;
  spec.threads_per_rank = 3;
  spec.leak_rank = 2;
  const Graph g = viewer_output(dir, spec, -1);
  const nlohmann::json m = measure(dir);
  expect_culprit_visible(m, "rank 2 missing, in stuck_in_host_code (/job/sim_trainer.py:88)",
                         "matched 1 of 4 ranks (2), 8.33% of stacks, 1 culprit frame");
  const std::string shot = screenshot_dir() + "/culprits-4-ranks.png";
  ASSERT_TRUE(chromium_screenshot(dir, "file://" + g.svg_path + "#search=stuck_in_host_code",
                                  shot, kFrameWidth, kFrameHeight));
  EXPECT_EQ(png_size(shot), std::make_pair(kFrameWidth, kFrameHeight)) << shot;
  std::printf("4 ranks: %zu-byte SVG in %.3f s, %d elements; screenshot %s\n", g.svg_bytes,
              g.seconds, m["elements"].get<int>(), shot.c_str());
}

TEST(CulpritBrowser, ThousandRanksTheMissingRankIsAsVisibleAsTheRest) {
  XPU_TIMER_SKIP_WITHOUT_CHROMIUM();
  TestFolder dir;
  SyntheticDumpSpec spec;
  spec.world_size = 1024;
  spec.threads_per_rank = 4;
  spec.leak_rank = 512;
  spec.no_file_ranks = {1023};  // unresponsive, its collector got nothing: a second group
  const Graph g = viewer_output(dir, spec, 1023);
  const nlohmann::json m = measure(dir);
  expect_culprit_visible(
      m,
      "rank 512 missing, in stuck_in_host_code (/job/sim_trainer.py:88); 1 more group below",
      "matched 1 of 1024 ranks (512), 0.02% of stacks, 1 culprit frame");
  // In the graph itself the same frame is one thread stack of 4,092: a sliver.
  EXPECT_LT(m["main"][2].get<double>(), 1.0) << m.dump();
  // The page grows with the merged frames, not with the ranks: four elements
  // (g, title, rect, text) per frame of the graph and of the panel, and a
  // few hundred for the header, the legend and the panel's headings.
  EXPECT_LE(m["elements"].get<size_t>(), 4 * (g.main_frames + g.panel_frames) + 200)
      << g.main_frames << " frames, " << g.panel_frames << " in the panel";
  const std::string shot = screenshot_dir() + "/culprits-1024-ranks.png";
  ASSERT_TRUE(chromium_screenshot(dir, "file://" + g.svg_path + "#search=stuck_in_host_code",
                                  shot, kFrameWidth, kFrameHeight));
  EXPECT_EQ(png_size(shot), std::make_pair(kFrameWidth, kFrameHeight)) << shot;
  std::printf("1024 ranks x 4 threads: %zu-byte SVG in %.3f s, %d elements; screenshot %s\n",
              g.svg_bytes, g.seconds, m["elements"].get<int>(), shot.c_str());
}

}  // namespace
}  // namespace xpu_timer::flamegraph
