#include "stack/mixed_stack.h"

#include <gtest/gtest.h>

namespace xpu_timer::stack {
namespace {

// Frames of the interpreter (python3_native) and of t.py; named apart from
// user_frames_test.cc's native() and py(), which a unity build (make sanitize)
// would otherwise take as overloads of these.
NativeFrame python3_native(const std::string& func, bool inlined = false) {
  NativeFrame f;
  f.func = func;
  f.module = "/usr/bin/python3";
  f.inlined = inlined;
  return f;
}

PythonFrame t_py(const std::string& func, bool entry) {
  PythonFrame f;
  f.func = func;
  f.file = "t.py";
  f.line = 1;
  f.entry = entry;
  return f;
}

std::vector<std::string> names(const std::vector<MixedFrame>& m) {
  std::vector<std::string> out;
  for (const auto& f : m) out.push_back((f.python ? "py:" : "c:") + f.func);
  return out;
}

TEST(MixedStack, EvalFrameNames) {
  EXPECT_TRUE(is_eval_frame_function("_PyEval_EvalFrameDefault"));
  EXPECT_TRUE(is_eval_frame_function("_PyEval_EvalFrameDefault.cold"));
  EXPECT_FALSE(is_eval_frame_function("_PyEval_EvalFrame"));
  EXPECT_FALSE(is_eval_frame_function("_PyEval_EvalFrameDefaultX"));
}

TEST(MixedStack, EachActivationGetsItsGroup) {
  // 3.11+: one activation runs inner+middle (entry at middle), another runs outer.
  std::vector<NativeFrame> n = {python3_native("read"),
                                python3_native("os_read"),
                                python3_native("_PyObject_VectorcallTstate", true),
                                python3_native("_PyEval_EvalFrameDefault"),
                                python3_native("PyObject_Call"),
                                python3_native("_PyEval_EvalFrameDefault.cold"),
                                python3_native("main")};
  std::vector<PythonFrame> p = {t_py("inner", false), t_py("middle", true), t_py("outer", true)};
  EXPECT_EQ(names(build_mixed_stack(n, p)),
            (std::vector<std::string>{"c:read", "c:os_read", "py:inner", "py:middle",
                                      "c:PyObject_Call", "py:outer", "c:main"}));
}

TEST(MixedStack, LeftoverGroupsGoOutermostAndMissingGroupsKeepNative) {
  std::vector<NativeFrame> n = {python3_native("read"), python3_native("_PyEval_EvalFrameDefault")};
  EXPECT_EQ(names(build_mixed_stack(n, {t_py("a", true), t_py("b", true)})),
            (std::vector<std::string>{"c:read", "py:a", "py:b"}));
  EXPECT_EQ(names(build_mixed_stack(n, {})),
            (std::vector<std::string>{"c:read", "c:_PyEval_EvalFrameDefault"}));
}

}  // namespace
}  // namespace xpu_timer::stack
