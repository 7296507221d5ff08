// The culprit panel of our flame-graph SVG: drawn between the header and the
// main graph, one block per group of culprit ranks (culprits.h), each at least
// kMinCulpritWidth units wide whatever share of the stacks its ranks hold, so
// that one missing rank of 1,024 is as visible as the 1,023 waiting for it.
// A block stacks the frames that set its ranks apart, from the frame the
// others share (dimmed, for context) up to the innermost, each labelled as
// far as its width allows with the rule of label_fit.h (the line number is
// never cut). Its frames are `<g class="cf" data-node="fN">`: the script
// searches them with the main graph's frames and a click zooms the main graph
// to their node. Pure function; any thread.
#pragma once

#include <string>

#include "flamegraph/culprits.h"
#include "flamegraph/merged_stacks.h"

namespace xpu_timer::flamegraph {

constexpr int kMinCulpritWidth = 300;  // viewBox units: 40 characters

struct CulpritPanel {
  std::string svg;  // "" without culprits
  int height = 0;   // units taken below `top`
};

// The panel for `width` units of viewBox, its first row at `top`.
CulpritPanel render_culprit_panel(const Culprits& culprits, const MergedView& view,
                                  const StringInterner& labels, int width, int top);

}  // namespace xpu_timer::flamegraph
