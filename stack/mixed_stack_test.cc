#include "stack/mixed_stack.h"

#include <gtest/gtest.h>

namespace xpu_timer::stack {
namespace {

NativeFrame native(const std::string& func, bool inlined = false) {
  NativeFrame f;
  f.func = func;
  f.module = "/usr/bin/python3";
  f.inlined = inlined;
  return f;
}

PythonFrame py(const std::string& func, bool entry) {
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
  std::vector<NativeFrame> n = {native("read"),
                                native("os_read"),
                                native("_PyObject_VectorcallTstate", true),
                                native("_PyEval_EvalFrameDefault"),
                                native("PyObject_Call"),
                                native("_PyEval_EvalFrameDefault.cold"),
                                native("main")};
  std::vector<PythonFrame> p = {py("inner", false), py("middle", true), py("outer", true)};
  EXPECT_EQ(names(build_mixed_stack(n, p)),
            (std::vector<std::string>{"c:read", "c:os_read", "py:inner", "py:middle",
                                      "c:PyObject_Call", "py:outer", "c:main"}));
}

TEST(MixedStack, LeftoverGroupsGoOutermostAndMissingGroupsKeepNative) {
  std::vector<NativeFrame> n = {native("read"), native("_PyEval_EvalFrameDefault")};
  EXPECT_EQ(names(build_mixed_stack(n, {py("a", true), py("b", true)})),
            (std::vector<std::string>{"c:read", "py:a", "py:b"}));
  EXPECT_EQ(names(build_mixed_stack(n, {})),
            (std::vector<std::string>{"c:read", "c:_PyEval_EvalFrameDefault"}));
}

}  // namespace
}  // namespace xpu_timer::stack
