#include "flamegraph/svg_renderer.h"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "flamegraph/frame_category.h"
#include "flamegraph/svg_script.h"
#include "flamegraph/xml_escape.h"

namespace xpu_timer::flamegraph {
namespace {

constexpr int kHeaderHeight = 60;
constexpr int kFooterHeight = 58;  // three details lines

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

// Sample offset of every node: children are laid out left to right from
// their parent's offset, in sorted order, so the picture is stable.
std::vector<uint64_t> sample_offsets(const MergedView& view) {
  std::vector<uint64_t> x(view.nodes.size(), 0);
  for (size_t i = 0; i < view.nodes.size(); ++i) {  // parents precede children
    uint64_t at = x[i];
    for (const auto& [label, child] : view.nodes[i].children) {
      x[child] = at;
      at += view.nodes[child].total;
    }
  }
  return x;
}

uint32_t max_depth(const MergedView& view) {
  uint32_t d = 0;
  for (const MergedNode& n : view.nodes) d = std::max(d, n.depth);
  return d;
}

const char kStyle[] = R"CSS(
text { font-family: monospace; font-size: 12px; fill: rgb(0,0,0); }
#title { font-size: 17px; text-anchor: middle; }
.f { cursor: pointer; }
.f:hover rect { stroke: black; stroke-width: 0.5; }
.f text { pointer-events: none; }
.hide { display: none; }
.parent { opacity: 0.5; }
.button { cursor: pointer; fill: rgb(0,0,160); }
.button:hover { text-decoration: underline; }
)CSS";

}  // namespace

std::string fit_text(const std::string& text, double width) {
  const long n = static_cast<long>(std::floor((width - 6) / kSvgCharWidth));
  if (n < 3) return "";
  if (static_cast<long>(text.size()) <= n) return text;
  // Cut on a UTF-8 boundary so that the clipped text stays valid.
  size_t cut = static_cast<size_t>(n - 2);
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "..";
}

std::string render_svg(const MergedView& view, const StringInterner& labels,
                       const SvgOptions& options) {
  const int width = options.width;
  const uint32_t depth = max_depth(view);
  const int height = kHeaderHeight + static_cast<int>(depth + 1) * kSvgFrameHeight + kFooterHeight;
  const uint64_t total = view.nodes[kRootNode].total;
  const double scale = total > 0 ? static_cast<double>(width - 2 * kSvgXPad) / total : 0;
  const std::vector<uint64_t> x = sample_offsets(view);

  std::string out;
  out.reserve(4096 + view.nodes.size() * 320);
  out += "<?xml version=\"1.0\" standalone=\"no\"?>\n";
  out += "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         std::to_string(width) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
         std::to_string(width) + " " + std::to_string(height) +
         "\" onload=\"init(evt)\" data-width=\"" + std::to_string(width) + "\" data-xpad=\"" +
         std::to_string(kSvgXPad) + "\" data-charw=\"" + fmt(kSvgCharWidth) + "\" data-frameh=\"" +
         std::to_string(kSvgFrameHeight) + "\" data-total=\"" + std::to_string(total) + "\">\n";
  out += "<style type=\"text/css\">";
  out += kStyle;
  out += "</style>\n<script type=\"text/ecmascript\"><![CDATA[";
  out += kSvgScript;
  out += "]]></script>\n";
  out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"rgb(248,248,240)\"/>\n";
  out += "<text id=\"title\" x=\"" + std::to_string(width / 2) + "\" y=\"22\">" +
         xml_escape(options.title) + "</text>\n";
  out += "<text id=\"subtitle\" x=\"" + std::to_string(kSvgXPad) + "\" y=\"42\">" +
         xml_escape(options.subtitle) + "</text>\n";
  out += "<text id=\"unzoom\" class=\"button hide\" x=\"" + std::to_string(kSvgXPad) + "\" y=\"" +
         std::to_string(kHeaderHeight - 4) + "\">Reset Zoom</text>\n";
  out += "<text id=\"search\" class=\"button\" x=\"" + std::to_string(width - kSvgXPad - 110) +
         "\" y=\"" + std::to_string(kHeaderHeight - 4) + "\">Search</text>\n";
  out += "<text id=\"matched\" x=\"" + std::to_string(width - kSvgXPad - 110) +
         "\" y=\"42\"></text>\n";
  out += "<text id=\"details\" x=\"" + std::to_string(kSvgXPad) + "\" y=\"" +
         std::to_string(height - kFooterHeight + 16) + "\">";
  for (int line = 0; line < 3; ++line) {
    out += "<tspan x=\"" + std::to_string(kSvgXPad) + "\" dy=\"" + (line == 0 ? "0" : "15") +
           "\"> </tspan>";
  }
  out += "</text>\n";
  if (total == 0) {
    out += "<text x=\"" + std::to_string(width / 2 - 100) + "\" y=\"" +
           std::to_string(kHeaderHeight + 14) + "\">no stacks in this view</text>\n";
  }

  out += "<g id=\"frames\">\n";
  const int bottom = height - kFooterHeight;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const MergedNode& n = view.nodes[i];
    if (n.total == 0) continue;
    const bool root = i == kRootNode;
    const std::string text = root ? "all (" + std::to_string(n.ranks.count()) + " ranks)" : n.text;
    const FrameCategory category =
        root ? FrameCategory::kState : classify_frame(n.kind, labels.text(n.label));
    const double fx = kSvgXPad + static_cast<double>(x[i]) * scale;
    const double fw = static_cast<double>(n.total) * scale;
    const int fy = bottom - static_cast<int>(n.depth + 1) * kSvgFrameHeight;
    const double pct = 100.0 * static_cast<double>(n.total) / static_cast<double>(total);
    out += "<g class=\"f\" id=\"f" + std::to_string(i) + "\" data-x=\"" + std::to_string(x[i]) +
           "\" data-w=\"" + std::to_string(n.total) + "\" data-d=\"" + std::to_string(n.depth) +
           "\" data-c=\"" + category_name(category) + "\"><title>" + xml_escape(text) + "\n" +
           std::to_string(n.total) + " thread stacks (" + fmt(pct) + "%), " +
           std::to_string(n.ranks.count()) + " ranks</title><rect x=\"" + fmt(fx) + "\" y=\"" +
           std::to_string(fy) + "\" width=\"" + fmt(fw) + "\" height=\"" +
           std::to_string(kSvgFrameHeight - 1) + "\" fill=\"" +
           (root ? std::string("rgb(200,200,200)") : frame_colour(category, labels.text(n.label))) +
           "\" rx=\"2\" ry=\"2\"/><text x=\"" + fmt(fx + 3) + "\" y=\"" +
           std::to_string(fy + kSvgFrameHeight - 4) + "\">" + xml_escape(fit_text(text, fw)) +
           "</text></g>\n";
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace xpu_timer::flamegraph
