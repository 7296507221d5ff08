#include "flamegraph/frame_category.h"

#include <gtest/gtest.h>

namespace xpu_timer::flamegraph {
namespace {

FrameCategory native(const char* label) { return classify_frame(FrameKind::kNative, label); }

TEST(FrameCategory, FollowsDesignColours) {
  EXPECT_EQ(classify_frame(FrameKind::kState, "state:S (sleeping)@process"), FrameCategory::kState);
  EXPECT_EQ(classify_frame(FrameKind::kPython, "train@/job/train.py:3"), FrameCategory::kPython);
  EXPECT_EQ(native("_PyEval_EvalFrameDefault@python3.12:ceval.c:4321"), FrameCategory::kPython);
  EXPECT_EQ(native("PyObject_Call@libpython3.11.so.1.0"), FrameCategory::kPython);
  EXPECT_EQ(native("ncclAllReduce@libnccl.so.2"), FrameCategory::kGpu);
  EXPECT_EQ(native("??+0x10@libcuda.so.1"), FrameCategory::kGpu);
  EXPECT_EQ(native("cudaStreamSynchronize@libsomething.so"), FrameCategory::kGpu);
  EXPECT_EQ(native("cuLaunchKernel@x"), FrameCategory::kGpu);
  EXPECT_EQ(native("c10::Error::Error()@libc10.so"), FrameCategory::kGpu);
  EXPECT_EQ(native("at::native::add@libfoo.so"), FrameCategory::kGpu);
  EXPECT_EQ(native("helper@libtorch_cuda.so"), FrameCategory::kGpu);
  EXPECT_EQ(native("std::condition_variable::wait()@libstdc++.so.6"), FrameCategory::kCpp);
  EXPECT_EQ(native("pthread_cond_wait@libc.so.6"), FrameCategory::kSystem);
  EXPECT_EQ(native("_dl_start@ld-linux-x86-64.so.2"), FrameCategory::kSystem);
  EXPECT_EQ(native("curl_easy_perform@libcurl.so"), FrameCategory::kSystem);  // not cu[A-Z]
  EXPECT_EQ(native("Pyramid@libgeo.so"), FrameCategory::kSystem);             // not Py[A-Z_]
}

TEST(FrameCategory, ColoursStayInTheirHueAndAreStable) {
  for (const char* label : {"a@b", "ncclAllReduce@libnccl.so.2", "zzz@q"}) {
    int r, g, b;
    ASSERT_EQ(
        std::sscanf(frame_colour(FrameCategory::kGpu, label).c_str(), "rgb(%d,%d,%d)", &r, &g, &b),
        3);
    EXPECT_GT(g, r);  // green
    EXPECT_GT(g, b);
    ASSERT_EQ(std::sscanf(frame_colour(FrameCategory::kPython, label).c_str(), "rgb(%d,%d,%d)", &r,
                          &g, &b),
              3);
    EXPECT_LT(r, 100);  // cyan: no red
    EXPECT_GT(b, 200);
    ASSERT_EQ(std::sscanf(frame_colour(FrameCategory::kSystem, label).c_str(), "rgb(%d,%d,%d)", &r,
                          &g, &b),
              3);
    EXPECT_GT(r, g);  // red
    ASSERT_EQ(
        std::sscanf(frame_colour(FrameCategory::kCpp, label).c_str(), "rgb(%d,%d,%d)", &r, &g, &b),
        3);
    EXPECT_GT(g, 190);  // yellow: red and green high, blue low
    EXPECT_LT(b, 100);
    ASSERT_EQ(std::sscanf(frame_colour(FrameCategory::kState, label).c_str(), "rgb(%d,%d,%d)", &r,
                          &g, &b),
              3);
    EXPECT_GT(b, r);  // purple
    EXPECT_GT(r, g);
    EXPECT_EQ(frame_colour(FrameCategory::kCpp, label), frame_colour(FrameCategory::kCpp, label));
  }
}

}  // namespace
}  // namespace xpu_timer::flamegraph
