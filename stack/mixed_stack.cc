#include "stack/mixed_stack.h"

namespace xpu_timer::stack {
namespace {

MixedFrame from_python(const PythonFrame& f) {
  MixedFrame m;
  m.python = true;
  m.func = f.func;
  m.file = f.file;
  m.line = f.line;
  return m;
}

MixedFrame from_native(const NativeFrame& f) {
  MixedFrame m;
  m.python = false;
  m.func = f.func;
  m.module = f.module;
  m.file = f.file;
  m.line = f.line;
  return m;
}

}  // namespace

bool is_eval_frame_function(const std::string& func) {
  static const std::string kEval = "_PyEval_EvalFrameDefault";
  return func.compare(0, kEval.size(), kEval) == 0 &&
         (func.size() == kEval.size() || func[kEval.size()] == '.');
}

std::vector<MixedFrame> build_mixed_stack(const std::vector<NativeFrame>& native,
                                          const std::vector<PythonFrame>& python) {
  std::vector<std::vector<const PythonFrame*>> groups;
  std::vector<const PythonFrame*> current;
  for (const auto& f : python) {
    current.push_back(&f);
    if (f.entry) {
      groups.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) groups.push_back(std::move(current));

  std::vector<MixedFrame> out;
  size_t next_group = 0;
  size_t i = 0;
  while (i < native.size()) {
    // One physical frame: its inlined frames (same pc) then the frame itself.
    size_t end = i;
    while (end < native.size() && native[end].inlined) ++end;
    if (end < native.size()) ++end;
    bool eval = false;
    for (size_t k = i; k < end; ++k) eval = eval || is_eval_frame_function(native[k].func);
    if (eval && next_group < groups.size()) {
      for (const PythonFrame* f : groups[next_group]) out.push_back(from_python(*f));
      ++next_group;
    } else {
      for (size_t k = i; k < end; ++k) out.push_back(from_native(native[k]));
    }
    i = end;
  }
  for (; next_group < groups.size(); ++next_group)
    for (const PythonFrame* f : groups[next_group]) out.push_back(from_python(*f));
  return out;
}

}  // namespace xpu_timer::stack
