#include "flamegraph/label_fit.h"

#include <gtest/gtest.h>

#include "flamegraph/svg_renderer.h"

namespace xpu_timer::flamegraph {
namespace {

constexpr char kLong[] = "stuck_in_host_code@/tmp/xpu_test_abc/simgpu/sim_trainer.py:88";

TEST(LabelFit, SourceIsShortenedBeforeTheFunctionAndTheLineNumberIsNeverCut) {
  EXPECT_EQ(fit_frame_label(kLong, 100), kLong);
  EXPECT_EQ(fit_frame_label(kLong, 50), "stuck_in_host_code@.../simgpu/sim_trainer.py:88");
  EXPECT_EQ(fit_frame_label(kLong, 42), "stuck_in_host_code@.../sim_trainer.py:88");
  EXPECT_EQ(fit_frame_label(kLong, 30), "stuck_..@.../sim_trainer.py:88");
  EXPECT_EQ(fit_frame_label(kLong, 22), ".../sim_trainer.py:88");
  EXPECT_EQ(fit_frame_label(kLong, 12), "..iner.py:88");
  EXPECT_EQ(fit_frame_label(kLong, 2), "");
  for (long n = 5; n < 70; ++n) {
    const std::string fitted = fit_frame_label(kLong, n);
    EXPECT_LE(char_count(fitted), n) << fitted;
    EXPECT_EQ(fitted.substr(fitted.size() - 3), ":88") << fitted;
  }
}

TEST(LabelFit, NativeSourceDropsItsModuleBeforeTheFunctionIsCut) {
  EXPECT_EQ(fit_frame_label("ncclAllReduce@libnccl.so.2:collectives.cc:120", 40),
            "ncclAllReduce@collectives.cc:120");
  EXPECT_EQ(fit_frame_label("ncclAllReduce@libnccl.so.2:collectives.cc:120", 20),
            "collectives.cc:120");
}

TEST(LabelFit, WithoutALineNumberTheFunctionStays) {
  EXPECT_EQ(fit_frame_label("cudaStreamSynchronize@libcudart.so.13", 20), "cudaStreamSynchron..");
  EXPECT_EQ(fit_frame_label("all (4 ranks)", 8), "all (4..");
  EXPECT_EQ(clip_text("abcdef", 6), "abcdef");
  EXPECT_EQ(clip_text("abcdefg", 6), "abcd..");
  EXPECT_FALSE(has_line_number("libc.so.6"));
  EXPECT_FALSE(has_line_number("12"));
  EXPECT_TRUE(has_line_number("/job/a.py:12"));
}

TEST(LabelFit, CountsCharactersNotBytes) {
  EXPECT_EQ(char_count("f\xC3\xBCnf"), 4);
  // "fünf@/a/b/c.py:7" is 16 characters (17 bytes): it fits in 16.
  EXPECT_EQ(fit_frame_label("f\xC3\xBCnf@/a/b/c.py:7", 16), "f\xC3\xBCnf@/a/b/c.py:7");
  // A cut never splits a character.
  EXPECT_EQ(fit_label("\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC\xC3\xBC", "x.py:1", 11, 1).func,
            "\xC3\xBC\xC3\xBC..");
}

TEST(LabelFit, HeadlinePartsKeepTheSourceWhole) {
  const FittedLabel f = fit_label("stuck_in_host_code", "/tmp/a/b/c/sim_trainer.py:88", 30, 3);
  EXPECT_EQ(f.func, "stuc..");
  EXPECT_EQ(f.source, ".../sim_trainer.py:88");
}

TEST(FitText, MainGraphDropsTheRankSetsBeforeTheLabel) {
  const std::string text = "stuck_in_host_code@/job/sim_trainer.py:88@2|0-1/3";
  EXPECT_EQ(fit_text(text, 6 + 50 * kSvgCharWidth), text);
  EXPECT_EQ(fit_text(text, 6 + 45 * kSvgCharWidth), "stuck_in_host_code@/job/sim_trainer.py:88");
  EXPECT_EQ(fit_text(text, 6 + 21 * kSvgCharWidth), ".../sim_trainer.py:88");
}

}  // namespace
}  // namespace xpu_timer::flamegraph
