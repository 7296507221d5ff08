#include "flamegraph/frame_label.h"

#include <gtest/gtest.h>

namespace xpu_timer::flamegraph {
namespace {

TEST(FrameLabel, NativeUsesModuleBasenameAndFileLineWhenKnown) {
  EXPECT_EQ(native_frame_label("ncclAllReduce", "/venv/nccl/lib/libnccl.so.2", "", std::nullopt,
                               "0x10", false),
            "ncclAllReduce@libnccl.so.2");
  EXPECT_EQ(native_frame_label("ncclAllReduce", "/venv/nccl/lib/libnccl.so.2",
                               "/src/collectives.cc", 120, "0x10", false),
            "ncclAllReduce@libnccl.so.2:collectives.cc:120");
  EXPECT_EQ(native_frame_label("inner", "/bin/x", "a.cc", std::nullopt, "", true),
            "inner [inlined]@x:a.cc");
}

TEST(FrameLabel, UnknownNativeFunctionKeepsItsOffset) {
  EXPECT_EQ(native_frame_label("??", "/lib/libcuda.so.1", "", std::nullopt, "0x2a1f0", false),
            "??+0x2a1f0@libcuda.so.1");
  EXPECT_EQ(native_frame_label("", "", "", std::nullopt, "", false), "??@?");
}

TEST(FrameLabel, PythonFileIsShortenedAfterSitePackages) {
  EXPECT_EQ(
      python_frame_label("all_reduce",
                         "/home/a/venv/lib/python3.12/site-packages/torch/distributed/x.py", 2501),
      "all_reduce@torch/distributed/x.py:2501");
  EXPECT_EQ(python_frame_label("train", "/job/train.py", 42), "train@/job/train.py:42");
  EXPECT_EQ(python_frame_label("f", "/usr/lib/python3/dist-packages/m.py", std::nullopt), "f@m.py");
}

TEST(FrameLabel, SeparatorsAndControlCharactersCannotSplitAFoldedLine) {
  EXPECT_EQ(python_frame_label("a;b\nc", "x;y.py", 1), "a,b c@x,y.py:1");
  EXPECT_EQ(state_frame_label("D (disk sleep)"), "state:D (disk sleep)@process");
  EXPECT_EQ(state_frame_label(""), "state:?@process");
}

}  // namespace
}  // namespace xpu_timer::flamegraph
