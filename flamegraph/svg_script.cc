#include "flamegraph/svg_script.h"

namespace xpu_timer::flamegraph {

// Layout constants (xpad, frame height, char width) are read from attributes
// of the root <svg> element, written by svg_renderer.cc, so both agree.
// Everything is in viewBox units (data-width wide): the browser scales the
// picture to the window, the script never needs the pixel size.
const char kSvgScript[] = R"JS(
"use strict";
var svg, frames = [], byId = {}, W, xpad, cw, fh, total, details, matchedText, resetBtn;
var zoomed = null, searching = null;

function attrNum(el, name) { return parseFloat(el.getAttribute(name)); }

function init(evt) {
  svg = document.documentElement;
  W = attrNum(svg, "data-width"); xpad = attrNum(svg, "data-xpad");
  cw = attrNum(svg, "data-charw"); fh = attrNum(svg, "data-frameh");
  total = attrNum(svg, "data-total");
  details = document.getElementById("details");
  matchedText = document.getElementById("matched");
  resetBtn = document.getElementById("unzoom");
  var gs = document.getElementsByClassName("f");
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i];
    var f = { g: g, id: g.id, x: attrNum(g, "data-x"), w: attrNum(g, "data-w"),
              d: attrNum(g, "data-d"), rect: g.getElementsByTagName("rect")[0],
              text: g.getElementsByTagName("text")[0], base: g.getAttribute("class") };
    var lines = g.getElementsByTagName("title")[0].textContent.split("\n");
    f.name = lines[0];
    f.roles = lines.length > 2 ? lines[2] : "";  // with a hang verdict: who is where
    f.fill = f.rect.getAttribute("fill");
    frames.push(f);
    byId[f.id] = f;
    g.addEventListener("click", onClick.bind(null, f));
    g.addEventListener("mouseover", showDetails.bind(null, f));
    g.addEventListener("mouseout", function () { setDetails(""); });
  }
  resetBtn.addEventListener("click", unzoom);
  document.getElementById("search").addEventListener("click", searchPrompt);
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); searchPrompt(); }
    else if (e.key === "Escape") { resetSearch(); }
  });
  applyFragment();
}

// "#zoom=12&search=nccl" (zoom takes a frame number or an id such as f12).
function applyFragment() {
  var hash = window.location.hash.replace(/^#/, "");
  if (!hash) return;
  var parts = hash.split("&");
  for (var i = 0; i < parts.length; i++) {
    var eq = parts[i].indexOf("=");
    if (eq < 0) continue;
    var key = parts[i].slice(0, eq), value = decodeURIComponent(parts[i].slice(eq + 1));
    if (key === "zoom") {
      var f = byId[/^f/.test(value) ? value : "f" + value];
      if (f) zoom(f);
    } else if (key === "search") {
      search(value);
    }
  }
}

function fitText(f, width) {
  var n = Math.floor((width - 6) / cw);
  if (n < 3) return "";
  return f.name.length <= n ? f.name : f.name.slice(0, n - 2) + "..";
}

function place(f, x, width) {
  f.rect.setAttribute("x", x.toFixed(2));
  f.rect.setAttribute("width", width.toFixed(2));
  f.text.setAttribute("x", (x + 3).toFixed(2));
  f.text.textContent = fitText(f, width);
}

// Keeps the classes the renderer gave ("f", "f missing") under zoom's own.
function setClass(f, cls) { f.g.setAttribute("class", cls ? f.base + " " + cls : f.base); }

function onClick(f, e) {
  if (f.d === 0) { unzoom(); return; }
  zoom(f);
}

function zoom(z) {
  if (z.w <= 0) return;
  var scale = (W - 2 * xpad) / z.w;
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i];
    if (f.x >= z.x && f.x + f.w <= z.x + z.w && f.d >= z.d) {
      // z itself and its descendants: stretched around z.
      setClass(f, "");
      place(f, xpad + (f.x - z.x) * scale, f.w * scale);
    } else if (f.d < z.d && f.x <= z.x && f.x + f.w >= z.x + z.w) {
      // Ancestors keep the whole width, dimmed.
      setClass(f, "parent");
      place(f, xpad, W - 2 * xpad);
    } else {
      setClass(f, "hide");
    }
  }
  zoomed = z;
  svg.setAttribute("data-zoomed", z.id);
  resetBtn.setAttribute("class", "button");
}

function unzoom() {
  var scale = total > 0 ? (W - 2 * xpad) / total : 0;
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i];
    setClass(f, "");
    place(f, xpad + f.x * scale, f.w * scale);
  }
  zoomed = null;
  svg.removeAttribute("data-zoomed");
  resetBtn.setAttribute("class", "button hide");
}

function setDetails(text) {
  var lines = details.getElementsByTagName("tspan");
  var per = Math.max(10, Math.floor((W - 2 * xpad) / cw));
  for (var i = 0; i < lines.length; i++) {
    lines[i].textContent = text.slice(i * per, (i + 1) * per);
  }
}

function showDetails(f) {
  var pct = total > 0 ? (100 * f.w / total).toFixed(2) : "0";
  setDetails(f.name + " (" + f.w + " thread stacks, " + pct + "%)" +
             (f.roles ? "; " + f.roles : ""));
}

function searchPrompt() {
  if (searching !== null) { resetSearch(); return; }
  var term = prompt("Search frames (regular expression):", "");
  if (term) search(term);
}

function resetSearch() {
  for (var i = 0; i < frames.length; i++) {
    frames[i].rect.setAttribute("fill", frames[i].fill);
    frames[i].g.removeAttribute("data-hl");
  }
  searching = null;
  matchedText.textContent = "";
  svg.removeAttribute("data-matched");
  document.getElementById("search").textContent = "Search";
}

function search(term) {
  var re;
  try { re = new RegExp(term); } catch (err) { matchedText.textContent = "bad regex"; return; }
  resetSearch();
  var hits = [];
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i];
    if (f.d > 0 && re.test(f.name)) {
      f.rect.setAttribute("fill", "rgb(230,0,230)");
      f.g.setAttribute("data-hl", "1");
      hits.push([f.x, f.x + f.w]);
    }
  }
  // Nested matches must not count twice: merge the [x, x+w) intervals.
  hits.sort(function (a, b) { return a[0] - b[0]; });
  var covered = 0, end = -1;
  for (var k = 0; k < hits.length; k++) {
    var lo = Math.max(hits[k][0], end), hi = hits[k][1];
    if (hi > lo) covered += hi - lo;
    end = Math.max(end, hi);
  }
  var pct = total > 0 ? (100 * covered / total).toFixed(2) : "0.00";
  searching = term;
  matchedText.textContent = "matched " + pct + "%";
  svg.setAttribute("data-matched", pct);
  document.getElementById("search").textContent = "Reset Search";
}
)JS";

}  // namespace xpu_timer::flamegraph
