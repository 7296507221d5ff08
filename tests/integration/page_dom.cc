#include "tests/integration/page_dom.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "flamegraph/chromium_driver.h"

namespace xpu_timer::testing {
namespace {

constexpr char kVirtualTime[] = "--virtual-time-budget=8000";

std::string url(int port, const std::string& path) {
  return "http://127.0.0.1:" + std::to_string(port) + path;
}

// Where the start tag holding id="id" begins, and its tag name.
std::pair<size_t, std::string> start_tag(const std::string& dom, const std::string& id) {
  const size_t at = dom.find(" id=\"" + id + "\"");
  if (at == std::string::npos) return {std::string::npos, ""};
  const size_t open = dom.rfind('<', at);
  size_t end = open + 1;
  while (end < dom.size() && std::isalnum(static_cast<unsigned char>(dom[end])) != 0) ++end;
  return {open, dom.substr(open + 1, end - open - 1)};
}

}  // namespace

std::string page_dom(const flamegraph::TestFolder& dir, int port, const std::string& path) {
  return flamegraph::chromium_dom(dir, url(port, path), kVirtualTime);
}

std::string page_screenshot(const flamegraph::TestFolder& dir, int port, const std::string& name,
                            int width, int height) {
  const std::string png = flamegraph::screenshot_dir("operator-page") + "/" + name;
  if (!flamegraph::chromium_screenshot(dir, url(port, "/"), png, width, height, kVirtualTime)) {
    return "";
  }
  EXPECT_EQ(flamegraph::png_size(png), std::make_pair(width, height)) << png;
  return png;
}

std::string decode_entities(std::string text) {
  const std::pair<const char*, const char*> entities[] = {
      {"&lt;", "<"},  {"&gt;", ">"},   {"&quot;", "\""},
      {"&#39;", "'"}, {"&nbsp;", " "}, {"&amp;", "&"}};  // last: "&amp;lt;" is the text "&lt;"
  for (const auto& [entity, c] : entities) {
    const std::string e(entity);
    for (size_t at = text.find(e); at != std::string::npos; at = text.find(e, at + 1)) {
      text.replace(at, e.size(), c);
    }
  }
  return text;
}

std::string element_text(const std::string& dom, const std::string& id) {
  const auto [open, tag] = start_tag(dom, id);
  if (open == std::string::npos) return "";
  const size_t body = dom.find('>', open) + 1;
  // The matching end tag: count the same tags opened and closed after it.
  int depth = 1;
  size_t at = body;
  while (depth > 0) {
    const size_t next_open = dom.find("<" + tag, at), next_close = dom.find("</" + tag + ">", at);
    if (next_close == std::string::npos) return "";
    const bool opens = next_open < next_close && (dom[next_open + 1 + tag.size()] == ' ' ||
                                                  dom[next_open + 1 + tag.size()] == '>');
    if (next_open < next_close && !opens) {
      at = next_open + 1;
      continue;
    }
    depth += opens ? 1 : -1;
    at = (opens ? next_open : next_close) + 1;
  }
  const std::string inner = dom.substr(body, at - 1 - body);
  std::string text;
  bool in_tag = false;
  for (char c : inner) {
    if (c == '<') in_tag = true;
    if (!in_tag) text += c;
    if (c == '>') in_tag = false;
  }
  return decode_entities(text);
}

std::string element_attribute(const std::string& dom, const std::string& id,
                              const std::string& name) {
  const size_t open = start_tag(dom, id).first;
  if (open == std::string::npos) return "";
  const size_t close = dom.find('>', open);
  const std::string tag = dom.substr(open, close - open);
  const size_t at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return "";
  const size_t value = at + name.size() + 3;
  return decode_entities(tag.substr(value, tag.find('"', value) - value));
}

size_t count_class(const std::string& dom, const std::string& name) {
  size_t n = 0;
  for (size_t at = dom.find(" class=\""); at != std::string::npos;
       at = dom.find(" class=\"", at + 1)) {
    const size_t value = at + 8;
    std::istringstream classes(dom.substr(value, dom.find('"', value) - value));
    std::string c;
    while (classes >> c) n += c == name ? 1 : 0;
  }
  return n;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

int polls_of(const std::string& dom) {
  const size_t at = dom.find("<body data-polls=\"");
  return at == std::string::npos ? 0 : std::atoi(dom.c_str() + at + 18);
}

}  // namespace xpu_timer::testing
