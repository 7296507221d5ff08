#include "inject/python_script.h"

#include <gtest/gtest.h>

#include <string>

namespace xpu_timer::inject {
namespace {

TEST(ScriptBuffer, TextAndBytesLiteralsFollowEachOther) {
  char out[128];
  ScriptBuffer script(out, sizeof(out));
  ASSERT_TRUE(script.add("f(%d, ", 4));
  ASSERT_TRUE(script.add_bytes("/tmp/crash dir"));
  ASSERT_TRUE(script.add(")\n"));
  EXPECT_STREQ(out, "f(4, b'/tmp/crash dir')\n");
}

// Whatever the value holds, the literal ends where it should and Python
// reads back the same bytes.
TEST(ScriptBuffer, QuotesBackslashesControlsAndUtf8BecomeEscapes) {
  char out[128];
  ScriptBuffer script(out, sizeof(out));
  ASSERT_TRUE(script.add_bytes("a'b\\c\n\xc3\xa9"));
  EXPECT_STREQ(out, "b'a\\x27b\\x5cc\\x0a\\xc3\\xa9'");
  ScriptBuffer empty(out, sizeof(out));
  ASSERT_TRUE(empty.add_bytes(""));
  EXPECT_STREQ(out, "b''");
}

TEST(ScriptBuffer, WhatDoesNotFitIsRefusedAndNothingMoreIsAdded) {
  char out[8];
  ScriptBuffer script(out, sizeof(out));
  EXPECT_TRUE(script.add("abc"));
  EXPECT_FALSE(script.add_bytes("defgh"));
  EXPECT_FALSE(script.add("x"));
  EXPECT_LT(std::string(out).size(), sizeof(out));  // still terminated
  ScriptBuffer tight(out, sizeof(out));
  EXPECT_FALSE(tight.add("%s", "12345678"));
}

}  // namespace
}  // namespace xpu_timer::inject
