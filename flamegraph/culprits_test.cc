#include "flamegraph/culprits.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flamegraph/bench/synthetic_dump.h"
#include "flamegraph/culprit_panel.h"
#include "flamegraph/dump_merger.h"
#include "flamegraph/test_folder.h"

namespace xpu_timer::flamegraph {
namespace {

MergeResult synthetic(const SyntheticDumpSpec& spec) {
  TestFolder dir;
  std::string error;
  EXPECT_TRUE(write_synthetic_dump(dir.path(), spec, &error)) << error;
  DumpMerge dump;
  EXPECT_TRUE(merge_dump(dir.path(), MergeOptions{}, &dump, &error)) << error;
  return std::move(dump.merged);
}

// One rank with one thread whose native frames are `frames`, outermost
// first, each "func@file:line" in module /bin/trainer.
stack::ProcessStack process(int rank, int world, const std::vector<std::string>& frames) {
  stack::ProcessStack p;
  p.rank = rank;
  p.world_size = world;
  p.process_state = "S (sleeping)";
  p.threads.emplace_back();
  for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
    stack::NativeFrame n;
    const size_t at = f->find('@'), colon = f->rfind(':');
    n.func = f->substr(0, at);
    n.module = "/bin/trainer";
    n.file = f->substr(at + 1, colon - at - 1);
    n.line = std::stoi(f->substr(colon + 1));
    p.threads.back().native.push_back(n);
  }
  return p;
}

// `world` ranks in main -> wait@nccl.cc:10, except those listed in `odd`
// whose stacks are given.
MergeResult job(int world, const std::vector<std::pair<int, std::vector<std::string>>>& odd) {
  StackMerger merger;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> frames = {"main@train.cc:1", "wait@nccl.cc:10"};
    for (const auto& [rank, f] : odd) {
      if (rank == r) frames = f;
    }
    EXPECT_TRUE(merger.add(process(r, world, frames)));
  }
  return merger.finish();
}

std::string text_of(const MergeResult& m, View v, uint32_t node) {
  return m.labels.text(m.view(v).nodes[node].label);
}

std::string headline(const MergeResult& m, const Culprits& c, View v = View::kMixed) {
  return culprit_headline(c, m.view(v), m.labels, 200);
}

TEST(Culprits, MergeRecordsTheLeafOfEveryThreadOfEveryRank) {
  const MergeResult m = job(3, {{1, {"main@train.cc:1", "sleep@host.cc:5"}}});
  const MergedView& v = m.view(View::kCpp);
  ASSERT_EQ(v.rank_leaves.size(), 3u);
  ASSERT_EQ(v.rank_leaves[1].size(), 1u);
  EXPECT_EQ(text_of(m, View::kCpp, v.rank_leaves[1][0]), "sleep@trainer:host.cc:5");
  EXPECT_EQ(v.rank_leaves[0], v.rank_leaves[2]);
}

TEST(Culprits, WithoutAVerdictTheRankFewShareDiffersNotTheRanksOnAnotherLine) {
  SyntheticDumpSpec spec;
  spec.world_size = 8;
  spec.threads_per_rank = 4;  // proxy threads spin on lines 1500-1502, all-reduce on 120-121
  spec.leak_rank = 5;
  spec.no_file_ranks = {7};
  const MergeResult m = synthetic(spec);
  const Culprits c = find_culprits(m.view(View::kMixed), m.labels, m.world_size, {7}, nullptr);
  EXPECT_FALSE(c.from_verdict);
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].role, RankRole::kDiffers);
  EXPECT_EQ(c.groups[0].ranks, std::vector<int>{5});
  ASSERT_EQ(c.groups[0].threads.size(), 1u);
  EXPECT_EQ(text_of(m, View::kMixed, c.groups[0].threads[0].leaf), "clock_nanosleep@libc.so.6");
  EXPECT_EQ(text_of(m, View::kMixed, c.groups[0].threads[0].diverges),
            "stuck_in_host_code@/job/sim_trainer.py:88");
  EXPECT_EQ(text_of(m, View::kMixed, c.groups[0].where),
            "stuck_in_host_code@/job/sim_trainer.py:88");
  EXPECT_EQ(c.groups[1].role, RankRole::kNoStack);
  EXPECT_EQ(c.groups[1].ranks, std::vector<int>{7});
  EXPECT_TRUE(c.groups[1].threads.empty());
  EXPECT_EQ(c.describe({0, 1, 2, 3, 4, 5, 6, 7}), "differs 5, no stack 7, other 0-4/6");
  EXPECT_EQ(headline(m, c),
            "rank 5 differs from the other 6 ranks, in stuck_in_host_code "
            "(/job/sim_trainer.py:88); 1 more group below");
  // The native view names the innermost frame with a line number.
  const Culprits cpp = find_culprits(m.view(View::kCpp), m.labels, m.world_size, {7}, nullptr);
  EXPECT_EQ(headline(m, cpp, View::kCpp),
            "rank 5 differs from the other 6 ranks, in pysleep "
            "(python3.12:timemodule.c:2159); 1 more group below");
}

TEST(Culprits, WithoutAVerdictOneRankOfAThousandStandsOut) {
  SyntheticDumpSpec spec;
  spec.world_size = 1024;
  spec.threads_per_rank = 2;
  spec.leak_rank = 512;
  const MergeResult m = synthetic(spec);
  const Culprits c = find_culprits(m.view(View::kPy), m.labels, m.world_size, {}, nullptr);
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].ranks, std::vector<int>{512});
  EXPECT_EQ(headline(m, c, View::kPy),
            "rank 512 differs from the other 1023 ranks, in stuck_in_host_code "
            "(/job/sim_trainer.py:88)");
}

TEST(Culprits, WithoutAVerdictTwoRanksOrAnEvenSplitNameNobody) {
  const MergeResult two = job(2, {{1, {"main@train.cc:1", "sleep@host.cc:5"}}});
  EXPECT_TRUE(find_culprits(two.view(View::kCpp), two.labels, 2, {}, nullptr).empty());
  // 16 ranks, half in each place: neither half is "few".
  std::vector<std::pair<int, std::vector<std::string>>> half;
  for (int r = 0; r < 8; ++r) half.push_back({r, {"main@train.cc:1", "sleep@host.cc:5"}});
  const MergeResult even = job(16, half);
  EXPECT_TRUE(find_culprits(even.view(View::kCpp), even.labels, 16, {}, nullptr).empty());
  // Two of 16 in one odd place: an eighth, both named in one group.
  const MergeResult pair =
      job(16, {{3, {"main@train.cc:1", "sleep@host.cc:5"}}, {9, {"main@train.cc:1", "sleep@host.cc:5"}}});
  const Culprits c = find_culprits(pair.view(View::kCpp), pair.labels, 16, {}, nullptr);
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].ranks, (std::vector<int>{3, 9}));
  EXPECT_EQ(headline(pair, c, View::kCpp),
            "ranks 3/9 differ from the other 14 ranks, in sleep (trainer:host.cc:5)");
}

TEST(Culprits, VerdictRanksWithTheSameStackAreOneGroup) {
  const std::vector<std::string> sleeping = {"main@train.cc:1", "load@data.cc:7", "sleep@host.cc:5"};
  const MergeResult m = job(16, {{3, sleeping}, {4, sleeping}, {5, sleeping}});
  HangVerdict v;
  v.missing = {3, 4, 5};
  v.stuck = {0, 1, 2, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const Culprits c = find_culprits(m.view(View::kCpp), m.labels, 16, {}, &v);
  EXPECT_TRUE(c.from_verdict);
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].role, RankRole::kMissing);
  EXPECT_EQ(c.groups[0].ranks, (std::vector<int>{3, 4, 5}));
  // The stack departs from the others' at load(); main() is the shared frame.
  EXPECT_EQ(text_of(m, View::kCpp, c.groups[0].threads[0].diverges), "load@trainer:data.cc:7");
  EXPECT_EQ(headline(m, c, View::kCpp), "ranks 3-5 missing, in sleep (trainer:host.cc:5)");
  EXPECT_EQ(c.describe({0, 3, 4, 5, 15}), "stuck 0/15, missing 3-5");
}

TEST(Culprits, VerdictRankThatDiffersOnlyByALineOrNotAtAll) {
  // Rank 3 waits on another line of the same function: that line is shown.
  const MergeResult line = job(8, {{3, {"main@train.cc:1", "wait@nccl.cc:20"}}});
  HangVerdict v;
  v.missing = {3};
  Culprits c = find_culprits(line.view(View::kCpp), line.labels, 8, {}, &v);
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_FALSE(c.groups[0].like_others);
  EXPECT_EQ(text_of(line, View::kCpp, c.groups[0].threads[0].diverges), "wait@trainer:nccl.cc:20");
  // Rank 3 is where everyone is: its first thread is shown, said to be alike.
  const MergeResult same = job(8, {});
  c = find_culprits(same.view(View::kCpp), same.labels, 8, {}, &v);
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_TRUE(c.groups[0].like_others);
  EXPECT_EQ(text_of(same, View::kCpp, c.groups[0].threads[0].diverges), "state:S (sleeping)@process");
  EXPECT_EQ(headline(same, c, View::kCpp), "rank 3 missing, in wait (trainer:nccl.cc:10)");
}

TEST(Culprits, EveryRoleOfTheVerdictIsACulpritInItsOwnGroup) {
  const std::vector<std::string> other = {"main@train.cc:1", "other@x.cc:3"};
  const MergeResult m = job(16, {{1, other}, {2, other}, {3, other}, {4, other}});
  HangVerdict v;
  v.stuck_elsewhere = {1};
  v.mismatched = {2};
  v.unresponsive = {3};
  v.exited = {4};
  v.missing = {15};  // where everyone is
  const Culprits c = find_culprits(m.view(View::kCpp), m.labels, 16, {}, &v);
  std::vector<RankRole> roles;
  for (const CulpritGroup& g : c.groups) roles.push_back(g.role);
  EXPECT_EQ(roles, (std::vector<RankRole>{RankRole::kMissing, RankRole::kStuckElsewhere,
                                          RankRole::kMismatched, RankRole::kUnresponsive,
                                          RankRole::kExited}));
  EXPECT_TRUE(c.groups[0].like_others);
  EXPECT_FALSE(c.groups[1].like_others);
  EXPECT_FALSE(c.is_culprit(0));
  EXPECT_TRUE(c.is_culprit(4));
}

TEST(Culprits, AVerdictRankWithoutAStackIsNamedWithoutFrames) {
  const MergeResult m = job(8, {});
  HangVerdict v;
  v.missing = {9};  // beyond the files' world: ignored, never indexed
  v.unresponsive = {7};
  StackMerger merger;
  for (int r = 0; r < 7; ++r) merger.add(process(r, 8, {"main@train.cc:1", "wait@nccl.cc:10"}));
  const MergeResult seven = merger.finish();
  const Culprits c = find_culprits(seven.view(View::kCpp), seven.labels, 8, {7}, &v);
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].ranks, std::vector<int>{7});
  EXPECT_TRUE(c.groups[0].threads.empty());
  EXPECT_EQ(headline(seven, c, View::kCpp), "rank 7 unresponsive (no stack in this view)");
  EXPECT_FALSE(m.view(View::kCpp).rank_leaves.empty());
}

TEST(CulpritPanel, EachGroupGetsItsMinimumWidthAndTheRestAreNamed) {
  // Eight ranks in eight different places of 64: eight groups.
  std::vector<std::pair<int, std::vector<std::string>>> odd;
  for (int r = 0; r < 8; ++r) {
    odd.push_back({r * 8, {"main@train.cc:1", "place" + std::to_string(r) + "@p.cc:1"}});
  }
  const MergeResult m = job(64, odd);
  const Culprits c = find_culprits(m.view(View::kCpp), m.labels, 64, {}, nullptr);
  ASSERT_EQ(c.groups.size(), 8u);
  const CulpritPanel p = render_culprit_panel(c, m.view(View::kCpp), m.labels, 1200, 100);
  size_t blocks = 0;
  for (size_t at = p.svg.find("<g class=\"cg\""); at != std::string::npos;
       at = p.svg.find("<g class=\"cg\"", at + 1)) {
    ++blocks;
  }
  EXPECT_EQ(blocks, 6u);
  // Three blocks a row, each (1180 - 2 gaps of 10) / 3 wide.
  EXPECT_NE(p.svg.find("<rect x=\"10.00\" y=\""), std::string::npos);
  EXPECT_NE(p.svg.find("width=\"386.67\""), std::string::npos) << p.svg;
  EXPECT_GE(386.67, kMinCulpritWidth);
  EXPECT_NE(p.svg.find(">and 2 more groups: ranks 48/56</text>"), std::string::npos) << p.svg;
  // Two rows of blocks (heading, 2 frames each) and the panel's heading and last line.
  EXPECT_EQ(p.height, 18 + 2 * (18 + 2 * 16 + 5) + 18 + 5);
}

}  // namespace
}  // namespace xpu_timer::flamegraph
