#include "flamegraph/hang_verdict.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>

#include "flamegraph/test_folder.h"

namespace xpu_timer::flamegraph {
namespace {

// The shape of the hang document (common/hang_document.h), trimmed.
std::string hang_json(const std::string& stacks_dir) {
  return R"js({"hung":true,"summary":"ranks 0,1,3 stuck in AllReduce #6 on comm 06543c4e36ee6c61 for 5.3 s; rank 2 missing (last completed #5 on that comm)",
    "ranks":[{"rank":0,"state":"stuck"},{"rank":1,"state":"stuck"},
             {"rank":2,"state":"missing","reason":"behind"},{"rank":3,"state":"stuck"},
             {"rank":4,"state":"ok"}],
    "groups":[], "stacks":{"dir":")js" +
         stacks_dir + R"js(","in_progress":false}})js";
}

TEST(HangVerdict, ParsesStuckAndMissingRanksAndTheSummary) {
  std::string error;
  const auto v = parse_hang_verdict(hang_json("/d/stacks-1"), &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(v->stuck, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(v->missing, (std::vector<int>{2}));
  EXPECT_EQ(v->summary,
            "ranks 0,1,3 stuck in AllReduce #6 on comm 06543c4e36ee6c61 for 5.3 s; rank 2 missing "
            "(last completed #5 on that comm)");
}

TEST(HangVerdict, StuckElsewhereMismatchedUnresponsiveAndExitedAreCulprits) {
  std::string error;
  const auto v = parse_hang_verdict(R"js({"hung":true,"summary":"s",
    "ranks":[{"rank":0,"state":"stuck"},{"rank":1,"state":"stuck"},{"rank":2,"state":"stuck"},
             {"rank":3,"state":"stuck"},{"rank":4,"state":"unresponsive"},{"rank":5,"state":"exited"},
             {"rank":6,"state":"ok"},{"rank":7,"state":"ok"}],
    "groups":[{"operation":"AllReduce","ranks":[0,1,2]},{"operation":"AllGather","ranks":[3]}],
    "mismatches":[{"odd_ranks":[7,"x",-1,4]},{"odd_ranks":"7"},5,{"odd_ranks":[6]}]})js",
                                    &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(v->stuck, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(v->stuck_elsewhere, std::vector<int>{3});
  EXPECT_EQ(v->unresponsive, std::vector<int>{4});
  EXPECT_EQ(v->exited, std::vector<int>{5});
  // Odd entries skipped; rank 4 keeps the role the verdict gave it.
  EXPECT_EQ(v->mismatched, (std::vector<int>{6, 7}));
  EXPECT_FALSE(v->stalled);
}

TEST(HangVerdict, TwoEqualGroupsNameNobodyElsewhereAndAStallIsAVerdict) {
  std::string error;
  auto v = parse_hang_verdict(R"js({"ranks":[{"rank":0,"state":"stuck"},{"rank":1,"state":"stuck"}],
    "groups":[{"ranks":[0]},{"ranks":[1]}]})js",
                              &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(v->stuck, (std::vector<int>{0, 1}));
  EXPECT_TRUE(v->stuck_elsewhere.empty());
  v = parse_hang_verdict(R"js({"stalled":true,"summary":"stalled",
    "ranks":[{"rank":0,"state":"stalled"},{"rank":1,"state":"stalled"}]})js",
                         &error);
  ASSERT_TRUE(v) << error;
  EXPECT_TRUE(v->stalled);
  EXPECT_TRUE(v->stuck.empty());
  // A mismatch alone, with no hang, is something to name too.
  v = parse_hang_verdict(R"js({"ranks":[],"mismatches":[{"odd_ranks":[3]}]})js", &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(v->mismatched, std::vector<int>{3});
}

TEST(HangVerdict, NoHangAndBadDocuments) {
  std::string error;
  EXPECT_FALSE(parse_hang_verdict(R"({"hung":false,"summary":"no hang","ranks":[]})", &error));
  EXPECT_EQ(error, "");
  EXPECT_FALSE(parse_hang_verdict("{\"hung\":", &error));
  EXPECT_EQ(error, "not valid JSON");
  EXPECT_FALSE(parse_hang_verdict("[1,2]", &error));
  EXPECT_EQ(error, "not a JSON object");
  EXPECT_FALSE(parse_hang_verdict(R"({"version":2,"ranks":[]})", &error));
  EXPECT_EQ(error, "hang document version 2; this build reads version 1");
  EXPECT_FALSE(parse_hang_verdict(R"({"ranks":7})", &error));
  EXPECT_EQ(error, "no \"ranks\" array: not a hang report");
  // Odd entries are skipped, not fatal.
  const auto v = parse_hang_verdict(
      R"({"ranks":[1,{"rank":"x","state":"stuck"},{"rank":-1,"state":"stuck"},{"rank":5,"state":"stuck"}]})",
      &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(v->stuck, (std::vector<int>{5}));
}

TEST(HangVerdict, FoundInTheFolderOrInTheParentWhenItNamesTheFolder) {
  TestFolder dump;
  const std::string stacks = dump.path() + "/stacks-20261122-101010.000";
  ASSERT_EQ(::mkdir(stacks.c_str(), 0755), 0);
  std::string warning;
  EXPECT_FALSE(find_hang_verdict(stacks, &warning));
  EXPECT_EQ(warning, "");

  // The supervisor's layout: hang.json in --dump-dir naming this folder.
  dump.write("hang.json", hang_json("/elsewhere/copied/stacks-20261122-101010.000"));
  auto v = find_hang_verdict(stacks + "/", &warning);
  ASSERT_TRUE(v) << warning;
  EXPECT_EQ(v->source, stacks + "/../hang.json");
  EXPECT_EQ(v->missing, (std::vector<int>{2}));

  // A later hang's hang.json names other stacks: not this folder's verdict.
  dump.write("hang.json", hang_json(dump.path() + "/stacks-20261122-111111.000"));
  EXPECT_FALSE(find_hang_verdict(stacks, &warning));
  EXPECT_EQ(warning, "");

  // One inside the folder wins, whatever it names.
  const std::string own = stacks + "/hang.json";
  FILE* f = std::fopen(own.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(hang_json("/x/y").c_str(), f);
  std::fclose(f);
  v = find_hang_verdict(stacks, &warning);
  ASSERT_TRUE(v) << warning;
  EXPECT_EQ(v->source, own);

  f = std::fopen(own.c_str(), "w");
  std::fputs("{broken", f);
  std::fclose(f);
  EXPECT_FALSE(find_hang_verdict(stacks, &warning));
  EXPECT_EQ(warning, own + ": not valid JSON; the graphs name no hang");
}

}  // namespace
}  // namespace xpu_timer::flamegraph
