#include "flamegraph/svg_renderer.h"

#include <gtest/gtest.h>

#include <regex>

#include "flamegraph/stack_file_parser.h"
#include "flamegraph/xml_escape.h"

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

MergeResult merge_one(const std::string& json) {
  StackFile f;
  std::string error;
  EXPECT_TRUE(parse_stack_file(json, &f, &error)) << error;
  StackMerger merger;
  merger.add(f);
  return merger.finish();
}

TEST(SvgRenderer, EscapesFrameTextAndMarksCategories) {
  const MergeResult m = merge_one(
      R"js({"version":1,"rank":0,"world_size":2,"process_state":"S (sleeping)","threads":[{"native":[
        {"func":"std::ostream& operator<< <char>(std::ostream&, \"&'x\")","module":"/lib/libfoo.so"},
        {"func":"ncclAllReduce","module":"/lib/libnccl.so.2"},
        {"func":"main","module":"/bin/a.out"}]}]})js");
  const std::string svg = render_svg(m.view(View::kCpp), m.labels, SvgOptions{"t<1>", "s&2", 1200});
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
  // The root spans the full width between the paddings.
  EXPECT_NE(svg.find("<rect x=\"10.00\" y=\""), std::string::npos);
  EXPECT_NE(svg.find("width=\"1180.00\""), std::string::npos);
  EXPECT_NE(svg.find("<script type=\"text/ecmascript\"><![CDATA["), std::string::npos);
  // Self-contained: nothing to fetch.
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(svg.find("src="), std::string::npos);
}

TEST(SvgRenderer, EmptyViewStillRenders) {
  const MergeResult m = merge_one(R"({"version":1,"rank":0,"world_size":1,"threads":[]})");
  const std::string svg = render_svg(m.view(View::kPy), m.labels, SvgOptions{});
  EXPECT_NE(svg.find("no stacks in this view"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace xpu_timer::flamegraph
