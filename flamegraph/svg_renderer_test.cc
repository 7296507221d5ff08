#include "flamegraph/svg_renderer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

#include "flamegraph/frame_category.h"
#include "flamegraph/own_threads.h"
#include "flamegraph/xml_escape.h"
#include "stack/stack_file.h"

namespace xpu_timer::flamegraph {
namespace {

TEST(XmlEscape, EscapesSpecialCharactersAndInvalidBytes) {
  EXPECT_EQ(xml_escape(R"(a<b>&"c'd)"), "a&lt;b&gt;&amp;&quot;c&apos;d");
  EXPECT_EQ(xml_escape("std::vector<int>::operator<<"), "std::vector&lt;int&gt;::operator&lt;&lt;");
  EXPECT_EQ(xml_escape(std::string("x\x01y", 3)), "x\xEF\xBF\xBDy");
  EXPECT_EQ(xml_escape("\xff"), "\xEF\xBF\xBD");
  EXPECT_EQ(xml_escape("caf\xC3\xA9"), "caf\xC3\xA9");  // valid UTF-8 kept
  EXPECT_EQ(xml_escape("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

TEST(FitText, ClipsWithDotsOrHides) {
  EXPECT_EQ(fit_text("short", 1000), "short");
  EXPECT_EQ(fit_text("abcdefghijklmnop", 6 + 8 * kSvgCharWidth), "abcdef..");
  EXPECT_EQ(fit_text("abcdef", 10), "");
}

MergeResult merge_files(const std::vector<std::string>& files) {
  StackMerger merger;
  for (const std::string& json : files) {
    std::string error;
    const std::optional<stack::ProcessStack> f = stack::parse_stack_file(json, &error);
    EXPECT_TRUE(f) << error;
    if (f) merger.add(*f);
  }
  return merger.finish();
}

MergeResult merge_one(const std::string& json) { return merge_files({json}); }

// The <g> element of the frame of the main graph (class "f", not the culprit
// panel's "cf") whose text starts with `prefix` ("" if none).
std::string frame_element(const std::string& svg, const std::string& prefix) {
  for (size_t title = svg.find("<title>" + prefix); title != std::string::npos;
       title = svg.find("<title>" + prefix, title + 1)) {
    const size_t g = svg.rfind("<g class=", title);
    if (svg.compare(g, 11, "<g class=\"f") != 0 || svg.compare(g, 12, "<g class=\"cf") == 0) {
      continue;
    }
    const size_t end = svg.find("</g>", title);
    return svg.substr(g, end + 4 - g);
  }
  return "";
}

// Rank `rank` of 4: stuck_in_host_code for rank 2, ncclAllReduce for the
// others, all under main; state S.
std::string hang_file(int rank) {
  const char* top = rank == 2 ? R"({"func":"stuck_in_host_code","module":"/bin/trainer"})"
                              : R"({"func":"ncclAllReduce","module":"/lib/libnccl.so.2"})";
  return R"js({"version":1,"rank":)js" + std::to_string(rank) +
         R"js(,"world_size":5,"process_state":"S (sleeping)","threads":[{"native":[)js" + top +
         R"js(,{"func":"main","module":"/bin/trainer"}]}]})js";
}

HangVerdict example_verdict() {
  HangVerdict v;
  v.summary =
      "ranks 0,1,3 stuck in AllReduce #6 on comm 06543c4e36ee6c61 for 5.3 s; rank 2 missing "
      "(last completed #5 on that comm)";
  v.stuck = {0, 1, 3};
  v.missing = {2};
  return v;
}

TEST(SvgRenderer, EscapesFrameTextAndMarksCategories) {
  const MergeResult m = merge_one(
      R"js({"version":1,"rank":0,"world_size":2,"process_state":"S (sleeping)","threads":[{"native":[
        {"func":"std::ostream& operator<< <char>(std::ostream&, \"&'x\")","module":"/lib/libfoo.so"},
        {"func":"ncclAllReduce","module":"/lib/libnccl.so.2"},
        {"func":"main","module":"/bin/a.out"}]}]})js");
  SvgOptions options;
  options.title = "t<1>";
  options.subtitle = "s&2";
  const std::string svg = render_svg(m.view(View::kCpp), m.labels, options);
  EXPECT_NE(svg.find("operator&lt;&lt; &lt;char&gt;(std::ostream&amp;, &quot;&amp;&apos;x&quot;)"),
            std::string::npos);
  EXPECT_EQ(svg.find("operator<<"), std::string::npos);
  EXPECT_NE(svg.find(">t&lt;1&gt;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">s&amp;2</text>"), std::string::npos);
  // One <g> per frame plus the root: state, main, ncclAllReduce, operator<<.
  const std::regex frame(R"re(<g class="f" id="f(\d+)"[^>]*data-c="(\w+)")re");
  std::vector<std::string> cats;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), frame); it != std::sregex_iterator();
       ++it) {
    cats.push_back((*it)[2]);
  }
  EXPECT_EQ(cats, (std::vector<std::string>{"state", "state", "sys", "gpu", "cpp"}));
  // Drawn in a 1200-unit viewBox, shown at the window's width.
  EXPECT_NE(svg.find("<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"100%\" "
                     "style=\"height:auto\" viewBox=\"0 0 1200 "),
            std::string::npos);
  EXPECT_EQ(svg.find(" width=\"1200\""), std::string::npos);
  // The root spans the full width between the paddings.
  EXPECT_NE(svg.find("<rect x=\"10.00\" y=\""), std::string::npos);
  EXPECT_NE(svg.find("width=\"1180.00\""), std::string::npos);
  EXPECT_NE(svg.find("<script type=\"text/ecmascript\"><![CDATA["), std::string::npos);
  // Self-contained: nothing to fetch.
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(svg.find("src="), std::string::npos);
}

TEST(SvgRenderer, LegendExplainsTheFrameFormatAndTheColourFamilies) {
  const MergeResult m = merge_one(hang_file(0));
  const std::string svg = render_svg(m.view(View::kCpp), m.labels, SvgOptions{});
  EXPECT_NE(svg.find("<text id=\"legend-format\" x=\"10\" y=\"60\">Frame: "
                     "func@source@stuck_ranks|leak_ranks = the ranks whose stack passes through "
                     "the frame | the ranks whose stack does not</text>"),
            std::string::npos)
      << svg.substr(0, 4000);
  // One swatch per family, in the family's colour.
  const std::pair<FrameCategory, const char*> families[] = {
      {FrameCategory::kPython, "Python/CPython"},
      {FrameCategory::kGpu, "torch/NCCL/CUDA"},
      {FrameCategory::kCpp, "C++"},
      {FrameCategory::kSystem, "C/system"},
      {FrameCategory::kState, "process state"}};
  for (const auto& [category, label] : families) {
    const std::string fill = "fill=\"" + frame_colour(category, "legend") + "\"/><text x=\"";
    const size_t at = svg.find(fill);
    ASSERT_NE(at, std::string::npos) << label;
    EXPECT_EQ(svg.find(std::string("\">") + label + "</text>", at),
              svg.find("</text>", at) - std::string(label).size() - 2)
        << label;
  }
  EXPECT_NE(svg.find(">xpu-timer background thread (folded)</text>"), std::string::npos);
  // Without a verdict: no verdict line and no outline swatch.
  EXPECT_EQ(svg.find("id=\"verdict\""), std::string::npos);
  EXPECT_EQ(svg.find("a culprit passes here"), std::string::npos);
  EXPECT_EQ(svg.find("data-culprit"), std::string::npos);
  EXPECT_EQ(svg.find("id=\"culprits\""), std::string::npos);
}

TEST(SvgRenderer, HangVerdictIsNamedAndTheCulpritsFramesAreShownAndOutlined) {
  const MergeResult m = merge_files({hang_file(0), hang_file(1), hang_file(2), hang_file(3)});
  SvgOptions options;
  options.title = "Native stacks of all ranks";
  options.subtitle = "world size 5";
  options.world_size = m.world_size;
  options.verdict = example_verdict();
  const std::string svg = render_svg(m.view(View::kCpp), m.labels, options);
  // The title says who and where; the view's name moves to the subtitle.
  EXPECT_NE(svg.find("<text id=\"title\" x=\"600\" y=\"22\">rank 2 missing, in "
                     "stuck_in_host_code (trainer)</text>"),
            std::string::npos)
      << svg.substr(0, 5000);
  EXPECT_NE(svg.find("<text id=\"subtitle\" x=\"10\" y=\"42\">Native stacks of all ranks; world "
                     "size 5</text>"),
            std::string::npos);
  EXPECT_NE(svg.find("<text id=\"verdict\" x=\"10\" y=\"60\"><title>hang: ranks 0,1,3 stuck in "
                     "AllReduce #6 on comm 06543c4e36ee6c61 for 5.3 s; rank 2 missing (last "
                     "completed #5 on that comm)</title>hang: ranks 0,1,3 stuck in AllReduce #6 on "
                     "comm 06543c4e36ee6c61 for 5.3 s; rank 2 missing (last completed #5 on that "
                     "comm)</text>"),
            std::string::npos)
      << svg.substr(0, 5000);
  EXPECT_NE(svg.find("<text id=\"legend-format\" x=\"10\" y=\"78\">"), std::string::npos);
  EXPECT_NE(svg.find(" stroke=\"rgb(200,0,0)\" stroke-width=\"1.5\" stroke-dasharray=\"3,2\"/>"
                     "<text x=\""),
            std::string::npos);
  EXPECT_NE(svg.find(">a culprit passes here</text>"), std::string::npos);

  // The panel: one block for rank 2, its frame the whole width, the frame it
  // shares with the others below it, dimmed.
  EXPECT_NE(svg.find("<g id=\"culprits\">\n<text x=\"10.00\" y=\"135.00\" class=\"cph\">Culprits "
                     "named by the hang verdict - click a frame to find it in the graph below</text>\n"
                     "<g class=\"cg\" id=\"cg0\" data-role=\"missing\" data-ranks=\"2\">\n"
                     "<text x=\"10.00\" y=\"153.00\" class=\"cgh\">rank 2: missing, 1 stack "
                     "differs</text>\n"
                     "<g class=\"cf ctx\" data-node=\"f2\"><title>main@trainer@0-3|4\nthe last "
                     "frame rank 2 missing shares with the others: 4 ranks pass here</title><rect "
                     "x=\"10.00\" y=\"174\" width=\"1180.00\" height=\"15\""),
            std::string::npos)
      << svg.substr(std::min(svg.size(), svg.find("<g id=\"culprits\">")), 2500);
  EXPECT_NE(svg.find("<g class=\"cf\" data-node=\"f4\"><title>stuck_in_host_code@trainer@2|0-1/3-4"
                     "\nrank 2 missing; 1 ranks pass here: missing 2</title><rect x=\"10.00\" "
                     "y=\"158\" width=\"1180.00\" height=\"15\" fill=\"rgb(226,98,71)\" rx=\"2\" "
                     "ry=\"2\"/><text x=\"13.00\" y=\"170\">stuck_in_host_code@trainer</text></g>\n"
                     "</g>\n</g>\n"),
            std::string::npos);

  // Rank 2's frame in the graph: outlined, the rank set left of '|' said to
  // be the missing rank.
  const std::string leak = frame_element(svg, "stuck_in_host_code@trainer@2|0-1/3-4");
  EXPECT_NE(leak.find("<g class=\"f culprit\" id=\"f"), std::string::npos) << leak;
  EXPECT_NE(leak.find("data-culprit=\"2\"><title>"), std::string::npos) << leak;
  EXPECT_NE(leak.find("1 thread stacks (25.00%), 1 ranks\nthrough here: missing 2; elsewhere: "
                      "stuck 0-1/3, other 4</title>"),
            std::string::npos)
      << leak;
  // The stuck ranks' frame: no outline, the roles the other way round.
  const std::string stuck = frame_element(svg, "ncclAllReduce@libnccl.so.2@0-1/3|2/4");
  EXPECT_NE(stuck.find("<g class=\"f\" id=\"f"), std::string::npos) << stuck;
  EXPECT_EQ(stuck.find("data-culprit"), std::string::npos) << stuck;
  EXPECT_NE(stuck.find("through here: stuck 0-1/3; elsewhere: missing 2, other 4</title>"),
            std::string::npos)
      << stuck;
  // A frame every rank passes through tells nothing apart: not outlined.
  const std::string common = frame_element(svg, "main@trainer@0-3|4");
  EXPECT_NE(common.find("<g class=\"f\" id=\"f"), std::string::npos) << common;
  EXPECT_NE(common.find("through here: stuck 0-1/3, missing 2; elsewhere: other 4</title>"),
            std::string::npos)
      << common;
}

TEST(SvgRenderer, OwnBackgroundThreadsFoldIntoOneMarkedFrame) {
  // Rank 0: the main thread, our named poll thread (it calls into the CUDA
  // runtime) and an unnamed thread that runs only our library's code.
  const MergeResult m = merge_one(R"js({"version":1,"rank":0,"world_size":1,
    "process_state":"S (sleeping)","threads":[
    {"name":"python3","native":[{"func":"main","module":"/bin/trainer"}]},
    {"name":"xpu_timer_poll","native":[
      {"func":"cudaEventQuery","module":"/lib/libcudart.so.13"},
      {"func":"xpu_timer::inject::Poller::run()","module":"/opt/lib/libxpu_timer_inject.so"},
      {"func":"execute_native_thread_routine","module":"/lib/libstdc++.so.6"},
      {"func":"start_thread","module":"/lib/libc.so.6"}]},
    {"name":"","native":[
      {"func":"__GI___poll","module":"/lib/libc.so.6"},
      {"func":"xpu_timer::inject::helper()","module":"/opt/lib/libxpu_timer_inject.so"},
      {"func":"start_thread","module":"/lib/libc.so.6"}]},
    {"name":"other","native":[
      {"func":"xpu_timer::inject::hook()","module":"/opt/lib/libxpu_timer_inject.so"},
      {"func":"user_code","module":"/bin/trainer"}]}]})js");
  const MergedView& cpp = m.view(View::kCpp);
  std::vector<std::string> texts;
  for (size_t i = 1; i < cpp.nodes.size(); ++i) texts.push_back(cpp.nodes[i].text);
  std::sort(texts.begin(), texts.end());
  // A user thread merely calling through our hook keeps its stack.
  EXPECT_EQ(texts, (std::vector<std::string>{
                       "[xpu-timer background thread]@libxpu_timer_inject.so@0|",
                       "main@trainer@0|",
                       "state:S (sleeping)@process@0|",
                       "user_code@trainer@0|",
                       "xpu_timer::inject::hook()@libxpu_timer_inject.so@0|",
                   }));
  for (const MergedNode& n : cpp.nodes) {
    if (n.text.rfind("[xpu-timer background thread]", 0) == 0) {
      EXPECT_EQ(n.total, 2u);
    }
  }
  const std::string svg = render_svg(cpp, m.labels, SvgOptions{});
  const std::string own = frame_element(svg, "[xpu-timer background thread]");
  EXPECT_NE(own.find("data-c=\"own\""), std::string::npos) << own;
  EXPECT_NE(own.find("fill=\"rgb(190,190,190)\""), std::string::npos) << own;
}

TEST(OwnThreads, NamedOrOnlyInOurLibrary) {
  stack::ThreadStack t;
  t.name = "xpu_timer_pyhook";
  EXPECT_TRUE(is_xpu_timer_thread(t));
  t.name = "python3";
  EXPECT_FALSE(is_xpu_timer_thread(t));  // no frames: nothing says it is ours
  t.native.push_back({});
  t.native.back().module = "/lib/x86_64-linux-gnu/libc.so.6";
  EXPECT_FALSE(is_xpu_timer_thread(t));
  t.native.push_back({});
  t.native.back().module = "/opt/xpu/lib/libxpu_timer_inject.so";
  EXPECT_TRUE(is_xpu_timer_thread(t));
  t.native.push_back({});
  t.native.back().module = "";  // an unknown module could be anyone's
  EXPECT_FALSE(is_xpu_timer_thread(t));
}

TEST(SvgRenderer, EmptyViewStillRenders) {
  const MergeResult m = merge_one(R"({"version":1,"rank":0,"world_size":1,"threads":[]})");
  const std::string svg = render_svg(m.view(View::kPy), m.labels, SvgOptions{});
  EXPECT_NE(svg.find("no stacks in this view"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace xpu_timer::flamegraph
