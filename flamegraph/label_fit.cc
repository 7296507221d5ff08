#include "flamegraph/label_fit.h"

#include <vector>

namespace xpu_timer::flamegraph {
namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The first `n` characters of text.
std::string_view head(std::string_view text, long n) {
  size_t at = 0;
  for (long seen = 0; at < text.size(); ++at) {
    if (!continuation(text[at]) && seen++ == n) break;
  }
  return text.substr(0, at);
}

// The last `n` characters of text.
std::string_view tail(std::string_view text, long n) {
  size_t at = text.size();
  for (long seen = 0; at > 0 && seen < n;) {
    --at;
    if (!continuation(text[at])) ++seen;
  }
  return text.substr(at);
}

// The source as written, then with its directories dropped one by one down
// to the file, then (a native frame's "module:file:line") without the
// module: each form shorter than the one before.
std::vector<std::string> source_forms(std::string_view source) {
  std::vector<std::string> forms{std::string(source)};
  auto add = [&](std::string shorter) {
    if (char_count(shorter) < char_count(forms.back())) forms.push_back(std::move(shorter));
  };
  const size_t last = source.rfind('/');
  if (last != std::string_view::npos && last > 0) {
    const size_t prev = source.rfind('/', last - 1);
    if (prev != std::string_view::npos && prev > 0) add(".../" + std::string(source.substr(prev + 1)));
    add(".../" + std::string(source.substr(last + 1)));
  }
  const std::string& shortest = forms.back();
  const size_t colon = shortest.find(':');
  if (colon != std::string::npos && shortest.find(':', colon + 1) != std::string::npos) {
    add(shortest.substr(colon + 1));
  }
  return forms;
}

}  // namespace

long char_count(std::string_view text) {
  long n = 0;
  for (char c : text) n += continuation(c) ? 0 : 1;
  return n;
}

bool has_line_number(std::string_view source) {
  size_t digits = 0;
  while (digits < source.size() && source[source.size() - 1 - digits] >= '0' &&
         source[source.size() - 1 - digits] <= '9') {
    ++digits;
  }
  return digits > 0 && digits < source.size() && source[source.size() - 1 - digits] == ':';
}

LabelParts split_label(std::string_view label) {
  const size_t at = label.rfind('@');
  if (at == std::string_view::npos) return {label, {}};
  return {label.substr(0, at), label.substr(at + 1)};
}

FittedLabel fit_label(std::string_view func, std::string_view source, long max_chars,
                      long separator_chars) {
  const long func_chars = char_count(func);
  const std::vector<std::string> forms = source_forms(source);
  for (const std::string& form : forms) {
    if (func_chars + separator_chars + char_count(form) <= max_chars) {
      return {std::string(func), form};
    }
  }
  const std::string& shortest = forms.back();
  const long room = max_chars - separator_chars - char_count(shortest);
  if (func_chars > 0 && room >= 3) return {std::string(head(func, room - 2)) + "..", shortest};
  if (char_count(shortest) <= max_chars) return {"", shortest};
  if (max_chars >= 3) return {"", ".." + std::string(tail(shortest, max_chars - 2))};
  return {};
}

std::string clip_text(std::string_view text, long max_chars) {
  if (char_count(text) <= max_chars) return std::string(text);
  return max_chars >= 3 ? std::string(head(text, max_chars - 2)) + ".." : std::string();
}

std::string fit_frame_label(std::string_view label, long max_chars) {
  const LabelParts parts = split_label(label);
  // Without a line number the function says more than the module: clipped
  // at the end as before.
  if (!has_line_number(parts.source)) return clip_text(label, max_chars);
  const FittedLabel fitted = fit_label(parts.func, parts.source, max_chars, 1);
  if (fitted.func.empty()) return fitted.source;
  return fitted.func + "@" + fitted.source;
}

}  // namespace xpu_timer::flamegraph
