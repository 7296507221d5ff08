#include "stack/stack_text.h"

#include <cinttypes>
#include <cstdio>

namespace xpu_timer::stack {
namespace {

std::string native_line(const std::string& func, const std::string& module, uint64_t offset,
                        const std::string& file, int line, bool inlined) {
  char buf[64];
  std::string out = "    " + func;
  if (inlined) out += " (inlined)";
  if (!file.empty()) {
    out += " (" + file + (line > 0 ? ":" + std::to_string(line) : "") + ")";
  } else if (!module.empty()) {
    snprintf(buf, sizeof(buf), "+0x%" PRIx64, offset);
    out += " (" + module + (offset ? buf : "") + ")";
  }
  return out + "\n";
}

}  // namespace

std::string format_stack_text(const ProcessStack& s, TextView view) {
  std::string out = "Process " + std::to_string(s.pid) + ": " + s.process_state;
  if (s.python_version) out += ", Python " + *s.python_version;
  char buf[64];
  snprintf(buf, sizeof(buf), ", stopped %.1f ms\n", s.stopped_ms);
  out += buf;
  for (const auto& e : s.errors) out += "note: " + e + "\n";
  for (const auto& t : s.threads) {
    out += "\nThread " + std::to_string(t.tid) + " (" + t.name + ")";
    if (t.holds_gil && *t.holds_gil) out += " [holds GIL]";
    out += " state " + std::string(1, t.state) + "\n";
    if (view == TextView::kPythonOnly) {
      for (const auto& f : t.python)
        out += "    " + f.func + " (" + f.file + ":" + std::to_string(f.line) + ")\n";
      if (t.python.empty()) out += "    (no Python frames)\n";
    } else if (view == TextView::kNativeOnly) {
      for (const auto& f : t.native)
        out += native_line(f.func, f.module, f.offset, f.file, f.line, f.inlined);
    } else {
      // Mixed frames carry no offset; use the native list's for unnamed ones.
      for (const auto& f : t.mixed) {
        if (f.python)
          out += "    " + f.func + " (" + f.file + ":" + std::to_string(f.line) + ") [py]\n";
        else
          out += native_line(f.func, f.module, 0, f.file, f.line, false);
      }
    }
  }
  return out;
}

}  // namespace xpu_timer::stack
