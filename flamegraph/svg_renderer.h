// Our own interactive flame-graph SVG (not flamegraph.pl's): one self-contained
// file, root at the bottom, frames coloured by category, with the embedded
// script of svg_script.cc for zoom, search and details. Its header holds a
// legend (the frame format and the colour families), the hang verdict when
// there is one, and the culprits (culprits.h): the title says who they are
// and where ("rank 2 missing, in f (file.py:88)"), a panel above the graph
// shows their distinctive frames at a readable width (culprit_panel.h), and
// the frames they pass through in the graph are outlined. Drawn in a viewBox
// of `width` units and shown at the window's width. Pure function of the
// merged view; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "flamegraph/hang_verdict.h"
#include "flamegraph/merged_stacks.h"

namespace xpu_timer::flamegraph {

struct SvgOptions {
  std::string title;                   // first header line, e.g. "cpp stacks"
  std::string subtitle;                // second header line, e.g. "1023 of 1024 ranks; no file: 7"
  int width = 1200;                    // of the viewBox; the picture itself follows the window
  uint32_t world_size = 0;             // of the dump (ranks without a file too); 0: from the view
  std::optional<HangVerdict> verdict;  // the supervisor's, when the dump has one
  std::vector<int> no_file;            // ranks of the world without a stack file
};

// Layout constants shared with the script through attributes of <svg>.
constexpr int kSvgXPad = 10;
constexpr int kSvgFrameHeight = 16;
constexpr int kSvgFontSize = 12;
constexpr double kSvgCharWidth = 7.25;  // monospace at 12px, slightly generous

std::string render_svg(const MergedView& view, const StringInterner& labels,
                       const SvgOptions& options);

// The text a frame of `width` units shows: `text` whole if it fits, else its
// `func@source` without the rank sets, shortened by the rule of label_fit.h;
// text without '@' is clipped with "..". The script applies the same rule
// when zooming.
std::string fit_text(const std::string& text, double width);

}  // namespace xpu_timer::flamegraph
