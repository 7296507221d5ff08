#include "flamegraph/culprit_panel.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/rank_set.h"
#include "flamegraph/frame_category.h"
#include "flamegraph/label_fit.h"
#include "flamegraph/svg_renderer.h"
#include "flamegraph/xml_escape.h"

namespace xpu_timer::flamegraph {
namespace {

constexpr int kRow = 18;        // a text row
constexpr int kGap = 10;        // between blocks
constexpr size_t kMaxGroups = 6;  // blocks drawn; the rest are named in one line
constexpr size_t kMaxRows = 16;   // frames of one stack drawn; the middle ones elided
constexpr size_t kKeepOuter = 4;  // of those, from the outermost end

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

long chars_in(double width) { return static_cast<long>(std::floor((width - 6) / kSvgCharWidth)); }

std::string text_at(double x, double y, const std::string& text, const std::string& cls = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" +
         (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + xml_escape(text) + "</text>\n";
}

// The frames of one column, outermost first: the shared frame below the
// divergence (context), then the divergence up to the leaf. 0 stands for the
// elided middle of a deep stack.
std::vector<uint32_t> column_frames(const MergedView& view, const CulpritThread& t,
                                    uint32_t* context) {
  std::vector<uint32_t> path;
  for (uint32_t n = t.leaf;; n = view.nodes[n].parent) {
    path.push_back(n);
    if (n == t.diverges) break;
  }
  *context = view.nodes[t.diverges].parent;
  if (*context != kRootNode) path.push_back(*context);
  std::reverse(path.begin(), path.end());
  if (path.size() > kMaxRows) {
    std::vector<uint32_t> kept(path.begin(), path.begin() + kKeepOuter);
    kept.push_back(kRootNode);  // the elision row
    kept.insert(kept.end(), path.end() - (kMaxRows - kKeepOuter - 1), path.end());
    path = std::move(kept);
  }
  return path;
}

std::string group_heading(const CulpritGroup& g, size_t columns) {
  std::string s = ranks_phrase(g.ranks) + ": " + role_name(g.role);
  if (g.threads.empty()) return s + (g.role == RankRole::kNoStack ? "" : ", no stack in this view");
  if (g.like_others) return s + ", stack like the others' (first thread shown)";
  s += g.threads.size() == 1 ? ", 1 stack differs" : ", " + std::to_string(g.threads.size()) + " stacks differ";
  if (g.threads.size() > columns) s += " (" + std::to_string(columns) + " shown)";
  return s;
}

class PanelWriter {
 public:
  PanelWriter(const Culprits& c, const MergedView& view, const StringInterner& labels)
      : c_(c), view_(view), labels_(labels) {}

  // One block at (x, y), w wide; returns its height.
  int group(const CulpritGroup& g, size_t index, double x, int y, double w) {
    const size_t columns =
        std::max<size_t>(1, std::min(g.threads.size(),
                                     static_cast<size_t>(w / kMinCulpritWidth)));
    const std::string ranks = fold_ranks(g.ranks);
    out_ += "<g class=\"cg\" id=\"cg" + std::to_string(index) + "\" data-role=\"" +
            role_name(g.role) + "\" data-ranks=\"" + ranks + "\">\n";
    out_ += text_at(x, y + 13, clip_text(group_heading(g, columns), chars_in(w) + 1),
                    "cgh");
    int rows = 0;
    std::vector<std::vector<uint32_t>> cols;
    std::vector<uint32_t> contexts;
    for (size_t i = 0; i < columns && i < g.threads.size(); ++i) {
      uint32_t context = kRootNode;
      cols.push_back(column_frames(view_, g.threads[i], &context));
      contexts.push_back(context);
      rows = std::max(rows, static_cast<int>(cols.back().size()));
    }
    const double col_w = w / static_cast<double>(columns);
    const int bottom = y + kRow + rows * kSvgFrameHeight;
    for (size_t ci = 0; ci < cols.size(); ++ci) {
      const double cx = x + static_cast<double>(ci) * col_w;
      for (size_t row = 0; row < cols[ci].size(); ++row) {
        const uint32_t node = cols[ci][row];
        const int fy = bottom - static_cast<int>(row + 1) * kSvgFrameHeight;
        if (node == kRootNode) {
          out_ += text_at(cx + 3, fy + kSvgFrameHeight - 4, "...", "cge");
          continue;
        }
        frame(g, node, node == contexts[ci], cx, fy, col_w - (ci + 1 < cols.size() ? 4 : 0));
      }
    }
    out_ += "</g>\n";
    return kRow + rows * kSvgFrameHeight;
  }

  std::string take() { return std::move(out_); }

 private:
  void frame(const CulpritGroup& g, uint32_t node, bool context, double x, int y, double w) {
    const MergedNode& n = view_.nodes[node];
    const std::string& label = labels_.text(n.label);
    const std::string who = ranks_phrase(g.ranks) + " " + role_name(g.role);
    const std::string note =
        context ? "the last frame " + who + " shares with the others: " +
                      std::to_string(n.ranks.count()) + " ranks pass here"
                : who + "; " + std::to_string(n.ranks.count()) + " ranks pass here: " +
                      c_.describe(n.ranks.to_vector());
    out_ += "<g class=\"cf" + std::string(context ? " ctx" : "") + "\" data-node=\"f" +
            std::to_string(node) + "\"><title>" + xml_escape(n.text) + "\n" + xml_escape(note) +
            "</title><rect x=\"" + num(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" +
            num(w) + "\" height=\"" + std::to_string(kSvgFrameHeight - 1) + "\" fill=\"" +
            frame_fill(n.kind, label) + "\" rx=\"2\" ry=\"2\"/><text x=\"" + num(x + 3) +
            "\" y=\"" + std::to_string(y + kSvgFrameHeight - 4) + "\">" +
            xml_escape(fit_frame_label(label, chars_in(w))) + "</text></g>\n";
  }

  const Culprits& c_;
  const MergedView& view_;
  const StringInterner& labels_;
  std::string out_;
};

}  // namespace

CulpritPanel render_culprit_panel(const Culprits& culprits, const MergedView& view,
                                  const StringInterner& labels, int width, int top) {
  CulpritPanel panel;
  if (culprits.empty()) return panel;
  const double usable = width - 2 * kSvgXPad;
  const size_t shown = std::min(culprits.groups.size(), kMaxGroups);
  const size_t per_row = std::max<size_t>(
      1, std::min(shown, static_cast<size_t>((usable + kGap) / (kMinCulpritWidth + kGap))));
  const double group_w = (usable - static_cast<double>(per_row - 1) * kGap) / per_row;

  PanelWriter writer(culprits, view, labels);
  std::string heading = culprits.from_verdict
                            ? "Culprits named by the hang verdict"
                            : "Culprits: ranks whose stacks few other ranks share (no verdict)";
  heading += " - click a frame to find it in the graph below";
  std::string svg = "<g id=\"culprits\">\n" +
                    text_at(kSvgXPad, top + 13, clip_text(heading, chars_in(usable) + 1),
                            "cph");
  int y = top + kRow;
  for (size_t first = 0; first < shown; first += per_row) {
    int row_h = 0;
    for (size_t i = first; i < shown && i < first + per_row; ++i) {
      const double x = kSvgXPad + static_cast<double>(i - first) * (group_w + kGap);
      row_h = std::max(row_h, writer.group(culprits.groups[i], i, x, y, group_w));
    }
    y += row_h + kGap / 2;
  }
  svg += writer.take();
  if (culprits.groups.size() > shown) {
    std::vector<int> rest;
    for (size_t i = shown; i < culprits.groups.size(); ++i) {
      rest.insert(rest.end(), culprits.groups[i].ranks.begin(), culprits.groups[i].ranks.end());
    }
    std::sort(rest.begin(), rest.end());
    const std::string line = "and " + std::to_string(culprits.groups.size() - shown) +
                             " more groups: " + ranks_phrase(rest);
    svg += text_at(kSvgXPad, y + 13, clip_text(line, chars_in(usable) + 1), "cgm");
    y += kRow;
  }
  svg += "</g>\n";
  panel.svg = std::move(svg);
  panel.height = y - top + kGap / 2;
  return panel;
}

}  // namespace xpu_timer::flamegraph
