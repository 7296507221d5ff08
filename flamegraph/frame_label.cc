#include "flamegraph/frame_label.h"

namespace xpu_timer::flamegraph {
namespace {

bool needs_sanitizing(char c) {
  return c == ';' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
}

void append_sanitized(std::string* out, std::string_view text) {
  size_t clean = 0;  // names almost never need it: copy the clean prefix at once
  while (clean < text.size() && !needs_sanitizing(text[clean])) ++clean;
  out->append(text.data(), clean);
  for (char c : text.substr(clean)) {
    if (c == ';') {
      out->push_back(',');
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
}

std::string_view basename(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view shorten_python_file(std::string_view file) {
  for (std::string_view marker : {"site-packages/", "dist-packages/"}) {
    const size_t at = file.rfind(marker);
    if (at != std::string_view::npos) return file.substr(at + marker.size());
  }
  return file;
}

void append_line(std::string* out, std::optional<long long> line) {
  if (line && *line > 0) {
    out->push_back(':');
    *out += std::to_string(*line);
  }
}

}  // namespace

std::string native_frame_label(std::string_view func, std::string_view module,
                               std::string_view file, std::optional<long long> line,
                               std::string_view offset, bool inlined) {
  std::string out;
  format_native_frame_label(&out, func, module, file, line, offset, inlined);
  return out;
}

std::string python_frame_label(std::string_view func, std::string_view file,
                               std::optional<long long> line) {
  std::string out;
  format_python_frame_label(&out, func, file, line);
  return out;
}

void format_native_frame_label(std::string* label, std::string_view func, std::string_view module,
                               std::string_view file, std::optional<long long> line,
                               std::string_view offset, bool inlined) {
  std::string& out = *label;
  out.clear();
  if (func.empty() || func == "??") {
    out += "??";
    if (!offset.empty()) {
      out.push_back('+');
      append_sanitized(&out, offset);
    }
  } else {
    append_sanitized(&out, func);
  }
  if (inlined) out += " [inlined]";
  out.push_back('@');
  append_sanitized(&out, module.empty() ? std::string_view("?") : basename(module));
  if (!file.empty()) {
    out.push_back(':');
    append_sanitized(&out, basename(file));
    append_line(&out, line);
  }
}

void format_python_frame_label(std::string* label, std::string_view func, std::string_view file,
                               std::optional<long long> line) {
  std::string& out = *label;
  out.clear();
  append_sanitized(&out, func.empty() ? std::string_view("??") : func);
  out.push_back('@');
  append_sanitized(&out, file.empty() ? std::string_view("?") : shorten_python_file(file));
  append_line(&out, line);
}

std::string state_frame_label(std::string_view process_state) {
  std::string out = "state:";
  append_sanitized(&out, process_state.empty() ? std::string_view("?") : process_state);
  out += "@process";
  return out;
}

}  // namespace xpu_timer::flamegraph
