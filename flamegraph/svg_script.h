// The JavaScript embedded in every flame-graph SVG: click to zoom, Reset Zoom,
// regex search with magenta highlight of the graph's and the culprit panel's
// frames and "matched N of W ranks (R), X% of stacks", a details line and
// tooltips for long names, and a URL fragment (`#zoom=<frame>&search=<regex>`)
// applied on load so that a headless browser can drive it in tests. Frames are
// `<g class="f" id="fN" data-x data-w data-d>` with x/width in samples; the
// panel's are `<g class="cf" data-node="fN">`.
#pragma once

namespace xpu_timer::flamegraph {

extern const char kSvgScript[];

}  // namespace xpu_timer::flamegraph
