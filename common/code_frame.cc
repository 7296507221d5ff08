#include "common/code_frame.h"

namespace xpu_timer {
namespace {

std::string bounded_text(const std::string& s) {
  std::string out = s.substr(0, kMaxCodeFrameText);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<CodeFrame> bounded_where(std::vector<CodeFrame> frames) {
  if (frames.size() > kMaxWhereFrames) frames.resize(kMaxWhereFrames);
  for (CodeFrame& f : frames) {
    f.function = bounded_text(f.function);
    f.file = bounded_text(f.file);
    if (f.line < 0) f.line = 0;
  }
  return frames;
}

std::string where_phrase(const std::vector<CodeFrame>& frames) {
  std::string out;
  for (const CodeFrame& f : frames) {
    if (!out.empty()) out += " <- ";
    out += f.function.empty() ? "??" : f.function;
    if (f.file.empty()) continue;
    out += " (" + base_name(f.file);
    if (f.line > 0) out += ":" + std::to_string(f.line);
    out += ")";
  }
  return out;
}

bool operator==(const CodeFrame& a, const CodeFrame& b) {
  return a.function == b.function && a.file == b.file && a.line == b.line &&
         a.python == b.python;
}

}  // namespace xpu_timer
