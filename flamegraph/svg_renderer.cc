#include "flamegraph/svg_renderer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "common/rank_set.h"
#include "flamegraph/culprit_panel.h"
#include "flamegraph/culprits.h"
#include "flamegraph/frame_category.h"
#include "flamegraph/label_fit.h"
#include "flamegraph/own_threads.h"
#include "flamegraph/svg_script.h"
#include "flamegraph/xml_escape.h"

namespace xpu_timer::flamegraph {
namespace {

constexpr int kRowHeight = 18;     // header rows below the title
constexpr int kFooterHeight = 58;  // three details lines
constexpr char kCulpritStroke[] = "rgb(200,0,0)";
constexpr double kTitleCharWidth = 10.3;  // monospace at 17px

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
#verdict { fill: rgb(160,0,0); font-weight: bold; }
.culprit rect { stroke: rgb(200,0,0); stroke-width: 1.5; stroke-dasharray: 3,2; }
.cph, .cgh { font-weight: bold; fill: rgb(160,0,0); }
.cf { cursor: pointer; }
.cf:hover rect { stroke: black; stroke-width: 0.5; }
.cf text { pointer-events: none; }
.ctx rect { opacity: 0.55; }
)CSS";

std::string text_el(const std::string& id, int x, int y, const std::string& text,
                    const std::string& extra = "") {
  return "<text id=\"" + id + "\" x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\"" +
         extra + ">" + xml_escape(text) + "</text>\n";
}

// Two legend rows: the frame format, then a swatch per colour family (and
// the outline of frames a culprit passes through, when there are culprits).
std::string legend(int format_y, int swatch_y, bool culprit_outline) {
  std::string out = "<g id=\"legend\">\n";
  out += text_el("legend-format", kSvgXPad, format_y,
                 "Frame: func@source@stuck_ranks|leak_ranks = the ranks whose stack passes "
                 "through the frame | the ranks whose stack does not");
  struct Swatch {
    std::string fill;
    const char* label;
    bool outline;
  };
  std::vector<Swatch> swatches = {
      {frame_colour(FrameCategory::kPython, "legend"), "Python/CPython", false},
      {frame_colour(FrameCategory::kGpu, "legend"), "torch/NCCL/CUDA", false},
      {frame_colour(FrameCategory::kCpp, "legend"), "C++", false},
      {frame_colour(FrameCategory::kSystem, "legend"), "C/system", false},
      {frame_colour(FrameCategory::kState, "legend"), "process state", false},
      {kOwnThreadFill, "xpu-timer background thread (folded)", false},
  };
  if (culprit_outline) {
    swatches.push_back({"rgb(248,248,240)", "a culprit passes here", true});
  }
  double x = kSvgXPad;
  for (const Swatch& s : swatches) {
    out += "<rect x=\"" + fmt(x) + "\" y=\"" + std::to_string(swatch_y - 10) +
           "\" width=\"12\" height=\"12\" fill=\"" + s.fill + "\"" +
           (s.outline ? " stroke=\"" + std::string(kCulpritStroke) +
                            "\" stroke-width=\"1.5\" stroke-dasharray=\"3,2\""
                      : std::string()) +
           "/>";
    out += "<text x=\"" + fmt(x + 16) + "\" y=\"" + std::to_string(swatch_y) + "\">" +
           xml_escape(s.label) + "</text>\n";
    x += 16 + kSvgCharWidth * static_cast<double>(std::string(s.label).size()) + 18;
  }
  out += "</g>\n";
  return out;
}

}  // namespace

std::string fit_text(const std::string& text, double width) {
  const long n = static_cast<long>(std::floor((width - 6) / kSvgCharWidth));
  if (n < 3) return "";
  if (char_count(text) <= n) return text;
  // "func@source@ranks|leak": the rank sets go first (the tooltip has them),
  // then the label is fitted keeping its line number (label_fit.h).
  const size_t at = text.rfind('@');
  if (at != std::string::npos && at > 0) return fit_frame_label(std::string_view(text).substr(0, at), n);
  return clip_text(text, n);
}

std::string render_svg(const MergedView& view, const StringInterner& labels,
                       const SvgOptions& options) {
  const int width = options.width;
  const HangVerdict* verdict = options.verdict ? &*options.verdict : nullptr;
  const Culprits culprits =
      find_culprits(view, labels, options.world_size, options.no_file, verdict);
  // Header rows: title 22, subtitle 42, [verdict], legend format, legend
  // swatches, buttons; then the culprit panel, then the frames.
  const int verdict_y = 42 + kRowHeight;
  const int format_y = (verdict != nullptr ? verdict_y : 42) + kRowHeight;
  const int swatch_y = format_y + kRowHeight;
  const int buttons_y = swatch_y + kRowHeight;
  const CulpritPanel panel = render_culprit_panel(culprits, view, labels, width, buttons_y + 8);
  const int header = buttons_y + 4 + panel.height;
  const uint32_t depth = max_depth(view);
  const int height = header + static_cast<int>(depth + 1) * kSvgFrameHeight + kFooterHeight;
  const uint64_t total = view.nodes[kRootNode].total;
  const double scale = total > 0 ? static_cast<double>(width - 2 * kSvgXPad) / total : 0;
  const std::vector<uint64_t> x = sample_offsets(view);
  const uint32_t world = static_cast<uint32_t>(culprits.roles.size());
  std::vector<bool> outlined(view.nodes.size(), false);
  for (const CulpritGroup& g : culprits.groups) {
    if (g.like_others) continue;  // nothing of theirs to tell apart
    for (const CulpritThread& t : g.threads) {
      for (uint32_t n = t.leaf; n != view.nodes[t.diverges].parent; n = view.nodes[n].parent) {
        outlined[n] = true;
      }
    }
  }
  // With a headline the title says who and where; the view's name moves to
  // the subtitle.
  const std::string headline = culprit_headline(
      culprits, view, labels,
      static_cast<long>((width - 2 * kSvgXPad) / kTitleCharWidth));
  const std::string title = headline.empty() ? options.title : headline;
  const std::string subtitle =
      headline.empty() || options.title.empty() ? options.subtitle
                                                : options.title + "; " + options.subtitle;

  std::string out;
  out.reserve(8192 + panel.svg.size() + view.nodes.size() * (culprits.empty() ? 320 : 400));
  out += "<?xml version=\"1.0\" standalone=\"no\"?>\n";
  // width 100% with height auto: the browser scales the viewBox to the
  // window's width and keeps the aspect ratio; the script works in viewBox
  // units, so zoom and search are unaffected by the scale.
  out +=
      "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"100%\" "
      "style=\"height:auto\" viewBox=\"0 0 " +
      std::to_string(width) + " " + std::to_string(height) +
      "\" onload=\"init(evt)\" data-width=\"" + std::to_string(width) + "\" data-xpad=\"" +
      std::to_string(kSvgXPad) + "\" data-charw=\"" + fmt(kSvgCharWidth) + "\" data-frameh=\"" +
      std::to_string(kSvgFrameHeight) + "\" data-total=\"" + std::to_string(total) +
      "\" data-world=\"" + std::to_string(world) + "\">\n";
  out += "<style type=\"text/css\">";
  out += kStyle;
  out += "</style>\n<script type=\"text/ecmascript\"><![CDATA[";
  out += kSvgScript;
  out += "]]></script>\n";
  out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"rgb(248,248,240)\"/>\n";
  out += text_el("title", width / 2, 22, title);
  out += text_el("subtitle", kSvgXPad, 42, subtitle);
  if (verdict != nullptr) {
    const std::string sentence = "hang: " + verdict->summary;
    out += "<text id=\"verdict\" x=\"" + std::to_string(kSvgXPad) + "\" y=\"" +
           std::to_string(verdict_y) + "\"><title>" + xml_escape(sentence) + "</title>" +
           xml_escape(fit_text(sentence, width - 2 * kSvgXPad)) + "</text>\n";
  }
  out += legend(format_y, swatch_y, !culprits.empty());
  out += text_el("unzoom", kSvgXPad, buttons_y, "Reset Zoom", " class=\"button hide\"");
  out += text_el("search", width - kSvgXPad - 110, buttons_y, "Search", " class=\"button\"");
  // Right-aligned left of the button: "matched 3 frames, 1 of 1024 ranks (2), ...".
  out += text_el("matched", width - kSvgXPad - 120, buttons_y, "", " text-anchor=\"end\"");
  out += panel.svg;
  out += "<text id=\"details\" x=\"" + std::to_string(kSvgXPad) + "\" y=\"" +
         std::to_string(height - kFooterHeight + 16) + "\">";
  for (int line = 0; line < 3; ++line) {
    out += "<tspan x=\"" + std::to_string(kSvgXPad) + "\" dy=\"" + (line == 0 ? "0" : "15") +
           "\"> </tspan>";
  }
  out += "</text>\n";
  if (total == 0) {
    out += "<text x=\"" + std::to_string(width / 2 - 100) + "\" y=\"" +
           std::to_string(header + 14) + "\">no stacks in this view</text>\n";
  }

  out += "<g id=\"frames\">\n";
  const int bottom = height - kFooterHeight;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const MergedNode& n = view.nodes[i];
    if (n.total == 0) continue;
    const bool root = i == kRootNode;
    const std::string text = root ? "all (" + std::to_string(n.ranks.count()) + " ranks)" : n.text;
    const std::string_view label = root ? std::string_view() : labels.text(n.label);
    const bool own_thread = !root && label == kOwnThreadLabel;
    const FrameCategory category = root ? FrameCategory::kState : classify_frame(n.kind, label);
    const double fx = kSvgXPad + static_cast<double>(x[i]) * scale;
    const double fw = static_cast<double>(n.total) * scale;
    const int fy = bottom - static_cast<int>(n.depth + 1) * kSvgFrameHeight;
    const double pct = 100.0 * static_cast<double>(n.total) / static_cast<double>(total);
    // With culprits: the roles of the ranks on each side of the '|', and an
    // outline on the frames that set a culprit apart (those of the panel).
    std::string roles_line, culprit_attr;
    if (!culprits.empty() && !root) {
      const std::vector<int> here = n.ranks.to_vector();
      roles_line = "\nthrough here: " + culprits.describe(here) +
                   "; elsewhere: " + culprits.describe(n.ranks.complement(world));
      if (outlined[i]) {
        std::vector<int> culprits_here;
        for (int r : here) {
          if (culprits.is_culprit(r)) culprits_here.push_back(r);
        }
        culprit_attr = " data-culprit=\"" + fold_ranks(culprits_here) + "\"";
      }
    }
    out += "<g class=\"f" + std::string(culprit_attr.empty() ? "" : " culprit") + "\" id=\"f" +
           std::to_string(i) + "\" data-x=\"" + std::to_string(x[i]) + "\" data-w=\"" +
           std::to_string(n.total) + "\" data-d=\"" + std::to_string(n.depth) + "\" data-c=\"" +
           (own_thread ? "own" : category_name(category)) + "\"" + culprit_attr + "><title>" +
           xml_escape(text) + "\n" + std::to_string(n.total) + " thread stacks (" + fmt(pct) +
           "%), " + std::to_string(n.ranks.count()) + " ranks" + xml_escape(roles_line) +
           "</title><rect x=\"" + fmt(fx) + "\" y=\"" + std::to_string(fy) + "\" width=\"" +
           fmt(fw) + "\" height=\"" + std::to_string(kSvgFrameHeight - 1) + "\" fill=\"" +
           (root ? std::string("rgb(200,200,200)") : frame_fill(n.kind, label)) +
           "\" rx=\"2\" ry=\"2\"/><text x=\"" + fmt(fx + 3) + "\" y=\"" +
           std::to_string(fy + kSvgFrameHeight - 4) + "\">" + xml_escape(fit_text(text, fw)) +
           "</text></g>\n";
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace xpu_timer::flamegraph
