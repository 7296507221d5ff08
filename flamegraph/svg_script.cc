#include "flamegraph/svg_script.h"

namespace xpu_timer::flamegraph {

// Layout constants (xpad, frame height, char width) are read from attributes
// of the root <svg> element, written by svg_renderer.cc, so both agree.
// Everything is in viewBox units (data-width wide): the browser scales the
// picture to the window, the script never needs the pixel size.
const char kSvgScript[] = R"JS(
"use strict";
var svg, frames = [], byId = {}, panel = [], W, xpad, cw, fh, total, world, details, matchedText,
    resetBtn;
var zoomed = null, searching = null;

function attrNum(el, name) { return parseFloat(el.getAttribute(name)); }

function init(evt) {
  svg = document.documentElement;
  W = attrNum(svg, "data-width"); xpad = attrNum(svg, "data-xpad");
  cw = attrNum(svg, "data-charw"); fh = attrNum(svg, "data-frameh");
  total = attrNum(svg, "data-total");
  world = attrNum(svg, "data-world") || 0;
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
  // The culprit panel's frames stand for nodes of the graph: a click zooms
  // the graph to the node, the details line shows the node.
  var cs = document.getElementsByClassName("cf");
  for (var j = 0; j < cs.length; j++) {
    var cg = cs[j];
    var p = { g: cg, node: byId[cg.getAttribute("data-node")],
              rect: cg.getElementsByTagName("rect")[0],
              name: cg.getElementsByTagName("title")[0].textContent.split("\n")[0] };
    if (!p.node) continue;
    p.fill = p.rect.getAttribute("fill");
    panel.push(p);
    cg.addEventListener("click", zoom.bind(null, p.node));
    cg.addEventListener("mouseover", showDetails.bind(null, p.node));
    cg.addEventListener("mouseout", function () { setDetails(""); });
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

// The rule of label_fit.h: the source shortened first (".../dir/file.py:88",
// "enqueue.cc:12" for "libnccl.so.2:enqueue.cc:12"), then the function cut
// with "..", then the source alone, then its tail: the line number is never
// the part cut away. A source without a line number protects nothing.
function sourceForms(src) {
  var forms = [src], last = src.lastIndexOf("/");
  function add(s) { if (s.length < forms[forms.length - 1].length) forms.push(s); }
  if (last > 0) {
    var prev = src.lastIndexOf("/", last - 1);
    if (prev > 0) add(".../" + src.slice(prev + 1));
    add(".../" + src.slice(last + 1));
  }
  var shortest = forms[forms.length - 1], colon = shortest.indexOf(":");
  if (colon >= 0 && shortest.indexOf(":", colon + 1) >= 0) add(shortest.slice(colon + 1));
  return forms;
}

function clip(text, n) {
  if (text.length <= n) return text;
  return n >= 3 ? text.slice(0, n - 2) + ".." : "";
}

function fitLabel(label, n) {
  var at = label.lastIndexOf("@");
  if (at < 0 || !/:[0-9]+$/.test(label.slice(at + 1))) return clip(label, n);
  var func = label.slice(0, at), forms = sourceForms(label.slice(at + 1));
  for (var i = 0; i < forms.length; i++) {
    if (func.length + 1 + forms[i].length <= n) return func + "@" + forms[i];
  }
  var s = forms[forms.length - 1], room = n - 1 - s.length;
  if (func.length > 0 && room >= 3) return func.slice(0, room - 2) + "..@" + s;
  if (s.length <= n) return s;
  return n >= 3 ? ".." + s.slice(s.length - (n - 2)) : "";
}

// A frame's name is "func@source@ranks|leak": whole if it fits, else its
// label without the rank sets, fitted.
function fitText(f, width) {
  var n = Math.floor((width - 6) / cw);
  if (n < 3) return "";
  if (f.name.length <= n) return f.name;
  var at = f.name.lastIndexOf("@");
  return at > 0 ? fitLabel(f.name.slice(0, at), n) : clip(f.name, n);
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
  for (var j = 0; j < panel.length; j++) {
    panel[j].rect.setAttribute("fill", panel[j].fill);
    panel[j].g.removeAttribute("data-hl");
  }
  searching = null;
  matchedText.textContent = "";
  svg.removeAttribute("data-matched");
  svg.removeAttribute("data-matched-ranks");
  document.getElementById("search").textContent = "Search";
}

// The ranks left of '|' in "func@source@0-3/6|4-5" marked in seen; returns
// how many were new.
function markRanks(seen, name) {
  var bar = name.lastIndexOf("|"), at = bar < 0 ? -1 : name.lastIndexOf("@", bar);
  if (at < 0) return 0;
  var parts = name.slice(at + 1, bar).split("/"), added = 0;
  for (var i = 0; i < parts.length; i++) {
    var dash = parts[i].indexOf("-");
    var lo = parseInt(dash < 0 ? parts[i] : parts[i].slice(0, dash), 10);
    var hi = dash < 0 ? lo : parseInt(parts[i].slice(dash + 1), 10);
    if (!(lo >= 0) || !(hi >= lo)) continue;
    for (var r = lo; r <= hi; r++) {
      if (!seen[r]) { seen[r] = true; added++; }
    }
  }
  return added;
}

// "0-3/6" of the ranks marked in seen.
function foldRanks(seen) {
  var out = [], r = 0;
  while (r < seen.length) {
    if (!seen[r]) { r++; continue; }
    var lo = r;
    while (r + 1 < seen.length && seen[r + 1]) r++;
    out.push(lo === r ? "" + lo : lo + "-" + r);
    r++;
  }
  return out.join("/");
}

function search(term) {
  var re;
  try { re = new RegExp(term); } catch (err) { matchedText.textContent = "bad regex"; return; }
  resetSearch();
  var hits = [], seen = [], ranks = 0, culpritHits = 0;
  for (var i = 0; i < frames.length; i++) {
    var f = frames[i];
    if (f.d > 0 && re.test(f.name)) {
      f.rect.setAttribute("fill", "rgb(230,0,230)");
      f.g.setAttribute("data-hl", "1");
      hits.push([f.x, f.x + f.w]);
      ranks += markRanks(seen, f.name);
    }
  }
  for (var j = 0; j < panel.length; j++) {
    if (re.test(panel[j].name)) {
      panel[j].rect.setAttribute("fill", "rgb(230,0,230)");
      panel[j].g.setAttribute("data-hl", "1");
      culpritHits++;
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
  var folded = foldRanks(seen);
  searching = term;
  matchedText.textContent = "matched " + ranks + " of " + world + " ranks" +
      (ranks > 0 && folded.length <= 24 ? " (" + folded + ")" : "") + ", " + pct +
      "% of stacks" + (culpritHits > 0 ? ", " + culpritHits + " culprit frame" +
      (culpritHits > 1 ? "s" : "") : "");
  svg.setAttribute("data-matched", pct);
  svg.setAttribute("data-matched-ranks", "" + ranks);
  document.getElementById("search").textContent = "Reset Search";
}
)JS";

}  // namespace xpu_timer::flamegraph
