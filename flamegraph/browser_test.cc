// The SVG's script in a real browser: headless Chromium loads the flame graph
// with `#zoom=<frame>&search=<regex>` (applied by the script on load exactly
// as a click and a search would be), and the DOM it dumps must show the zoomed
// frame and its child stretched to the full width, frames outside hidden, and
// exactly the matching frames highlighted. A second test shows the graph in
// frames of two widths and measures it: it fills the width, and a click zooms
// to the full width there too. Skipped where chromium is missing.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "flamegraph/bench/synthetic_dump.h"
#include "flamegraph/chromium_driver.h"
#include "flamegraph/dump_merger.h"
#include "flamegraph/svg_renderer.h"
#include "flamegraph/test_folder.h"

namespace xpu_timer::flamegraph {
namespace {

struct DomFrame {
  std::string cls;
  bool highlighted = false;
  double width = 0;
};

std::map<std::string, DomFrame> frames_in_dom(const std::string& dom) {
  std::map<std::string, DomFrame> out;
  const std::regex g(R"(<g ([^>]*)><title>[^<]*</title><rect ([^>]*)>)");
  const std::regex id(R"re(id="(f\d+)")re"), cls(R"re(class="([^"]*)")re"),
      width(R"re(width="([\d.]+)")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), g); it != std::sregex_iterator();
       ++it) {
    const std::string attrs = (*it)[1], rect = (*it)[2];
    std::smatch m;
    if (!std::regex_search(attrs, m, id)) continue;
    DomFrame f;
    const std::string key = m[1];
    if (std::regex_search(attrs, m, cls)) f.cls = m[1];
    f.highlighted = attrs.find("data-hl=\"1\"") != std::string::npos;
    if (std::regex_search(rect, m, width)) f.width = std::stod(m[1]);
    out[key] = f;
  }
  return out;
}

uint32_t find_node(const MergedView& view, const std::string& prefix) {
  for (uint32_t i = 1; i < view.nodes.size(); ++i) {
    if (view.nodes[i].text.rfind(prefix, 0) == 0) return i;
  }
  ADD_FAILURE() << "no frame starting with " << prefix;
  return 0;
}

bool descends_from(const MergedView& view, uint32_t node, uint32_t ancestor) {
  for (; node != kRootNode; node = view.nodes[node].parent) {
    if (node == ancestor) return true;
  }
  return ancestor == kRootNode;
}

TEST(Browser, ZoomStretchesTheFrameAndSearchHighlightsExactlyTheMatches) {
  XPU_TIMER_SKIP_WITHOUT_CHROMIUM();
  TestFolder dir;
  SyntheticDumpSpec spec;
  spec.world_size = 8;
  spec.threads_per_rank = 4;
  spec.leak_rank = 5;
  spec.no_file_ranks = {7};
  std::string error;
  ASSERT_TRUE(write_synthetic_dump(dir.path(), spec, &error)) << error;
  DumpMerge dump;
  ASSERT_TRUE(merge_dump(dir.path(), MergeOptions{}, &dump, &error)) << error;
  const MergedView& view = dump.merged.view(View::kMixed);
  SvgOptions options;
  options.title = "mixed";
  const std::string svg_path =
      dir.write("mixed_stack.svg", render_svg(view, dump.merged.labels, options));

  const uint32_t target = find_node(view, "stuck_in_host_code@");
  ASSERT_EQ(view.nodes[target].text, "stuck_in_host_code@/job/sim_trainer.py:88@5|0-4/6-7");
  ASSERT_EQ(view.nodes[target].children.size(), 1u);
  const uint32_t child = view.nodes[target].children[0].second;
  const double full = 1200 - 2 * kSvgXPad;
  const std::regex pattern("^ncclAllReduce@");
  std::set<std::string> expected_hl;
  for (uint32_t i = 1; i < view.nodes.size(); ++i) {
    if (std::regex_search(view.nodes[i].text, pattern)) expected_hl.insert("f" + std::to_string(i));
  }
  ASSERT_EQ(expected_hl.size(), 2u);  // ranks with line 120 and 121 of collectives.cc

  const std::string dom = chromium_dom(dir, "file://" + svg_path + "#zoom=" +
                                                std::to_string(target) +
                                                "&search=%5EncclAllReduce%40");
  ASSERT_NE(dom.find("data-zoomed=\"f" + std::to_string(target) + "\""), std::string::npos)
      << dom.substr(0, 2000);
  EXPECT_NE(dom.find("data-matched=\""), std::string::npos);

  const std::map<std::string, DomFrame> frames = frames_in_dom(dom);
  ASSERT_EQ(frames.size(), view.nodes.size());
  const std::string tid = "f" + std::to_string(target), cid = "f" + std::to_string(child);
  EXPECT_LT(static_cast<double>(view.nodes[target].total) / view.nodes[kRootNode].total, 0.1);
  EXPECT_NEAR(frames.at(tid).width, full, 0.01);
  EXPECT_NEAR(frames.at(cid).width, full, 0.01);
  // Rank 5 differs from the others (no verdict): its frame is outlined.
  EXPECT_EQ(frames.at(tid).cls, "f culprit");
  EXPECT_EQ(frames.at("f0").cls, "f parent");
  std::set<std::string> highlighted;
  for (const auto& [id, f] : frames) {
    const uint32_t n = static_cast<uint32_t>(std::stoul(id.substr(1)));
    const bool inside = descends_from(view, n, target);
    const bool ancestor = descends_from(view, target, n) && n != target;
    if (!inside && !ancestor) {
      EXPECT_TRUE(f.cls == "f hide" || f.cls == "f culprit hide") << id << " " << view.nodes[n].text;
    }
    if (ancestor) {
      EXPECT_EQ(f.cls, "f parent") << id;
    }
    if (f.highlighted) highlighted.insert(id);
  }
  EXPECT_EQ(highlighted, expected_hl);

  if (const char* shots = std::getenv("XPU_TIMER_SCREENSHOT_DIR")) {
    EXPECT_TRUE(chromium_screenshot(dir, "file://" + svg_path + "#search=ncclAllReduce",
                                    std::string(shots) + "/mixed_stack.png", 1200, 700));
  }
}

TEST(Browser, GraphFollowsTheWindowWidthAndZoomStillFillsIt) {
  XPU_TIMER_SKIP_WITHOUT_CHROMIUM();
  TestFolder dir;
  SyntheticDumpSpec spec;
  spec.world_size = 4;
  spec.threads_per_rank = 3;
  spec.leak_rank = 2;
  std::string error;
  ASSERT_TRUE(write_synthetic_dump(dir.path(), spec, &error)) << error;
  DumpMerge dump;
  ASSERT_TRUE(merge_dump(dir.path(), MergeOptions{}, &dump, &error)) << error;
  const MergedView& view = dump.merged.view(View::kMixed);
  SvgOptions options;
  options.title = "mixed";
  options.world_size = dump.merged.world_size;
  HangVerdict verdict;
  verdict.summary = "ranks 0,1,3 stuck in AllReduce #6; rank 2 missing";
  verdict.stuck = {0, 1, 3};
  verdict.missing = {2};
  options.verdict = verdict;
  dir.write("g.svg", render_svg(view, dump.merged.labels, options));
  const uint32_t target = find_node(view, "stuck_in_host_code@");
  const std::string tid = "f" + std::to_string(target);

  // Each frame measures the graph it shows, clicks the missing rank's frame
  // and measures again; the numbers land in the page the DOM dump shows.
  std::string html = R"(<html><body style="margin:0">
<iframe id="narrow" src="g.svg" style="width:600px;height:400px;border:0"></iframe>
<iframe id="wide" src="g.svg" style="width:1500px;height:400px;border:0"></iframe>
<pre id="out"></pre><script>
window.addEventListener("load", function () {
  var s = "";
  ["narrow", "wide"].forEach(function (id) {
    var d = document.getElementById(id).contentDocument;
    var svg = d.documentElement;
    var root = d.getElementById("f0").getElementsByTagName("rect")[0];
    var t = d.getElementById("TARGET");
    var before = root.getBoundingClientRect().width;
    t.dispatchEvent(new MouseEvent("click", {bubbles: true}));
    var after = t.getElementsByTagName("rect")[0].getBoundingClientRect().width;
    s += id + " svg=" + svg.getBoundingClientRect().width + " root=" + before +
         " zoomed=" + after + " class=" + t.getAttribute("class") + ";\n";
  });
  document.getElementById("out").textContent = s;
});
</script></body></html>)";
  html.replace(html.find("TARGET"), 6, tid);
  const std::string page = dir.write("page.html", html);
  const std::string dom = chromium_dom(dir, "file://" + page, "--allow-file-access-from-files");

  const std::regex line(
      R"re((narrow|wide) svg=([\d.]+) root=([\d.]+) zoomed=([\d.]+) class=([^;]*);)re");
  std::map<std::string, std::array<double, 3>> measured;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), line); it != std::sregex_iterator();
       ++it) {
    measured[(*it)[1]] = {std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4])};
    EXPECT_EQ((*it)[5], "f culprit") << "the outline must survive the zoom";
  }
  ASSERT_EQ(measured.size(), 2u) << dom.substr(0, 3000);
  const double usable = (1200.0 - 2 * kSvgXPad) / 1200.0;  // share of the width frames get
  for (const auto& [id, m] : measured) {
    const double frame_width = id == "narrow" ? 600 : 1500;
    // The picture is as wide as its frame (less a scroll bar, it is tall).
    EXPECT_GT(m[0], frame_width - 20) << id;
    EXPECT_LE(m[0], frame_width) << id;
    EXPECT_NEAR(m[1], m[0] * usable, 1.0) << id;
    EXPECT_NEAR(m[2], m[0] * usable, 1.0) << id;
  }
}

}  // namespace
}  // namespace xpu_timer::flamegraph
