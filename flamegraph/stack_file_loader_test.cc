// Loading a folder: malformed files are skipped with one line naming the file
// and the problem; good files still merge; a progress bar when asked. (What the
// reader says of each problem is checked in stack/stack_file_test.cc.)
#include "flamegraph/stack_file_loader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "flamegraph/dump_merger.h"
#include "flamegraph/test_folder.h"

namespace xpu_timer::flamegraph {
namespace {

const char kGood[] =
    R"js({"version":1,"rank":0,"world_size":4,"process_state":"S (sleeping)","threads":[
  {"tid":7,"name":"main","native":[{"func":"poll","module":"/lib/libc.so.6"}],"python":[],"mixed":[]}]})js";

std::string with_rank(int rank) {
  std::string s = kGood;
  s.replace(s.find("\"rank\":0"), 8, "\"rank\":" + std::to_string(rank));
  return s;
}

TEST(StackFileLoader, SkipsEachMalformedFileWithOneMessageAndMergesTheRest) {
  TestFolder dir;
  dir.write("00000-00004.stacktrace", with_rank(0));
  dir.write("00002-00004.stacktrace", with_rank(2));
  std::map<std::string, std::string> bad = {
      {"00001-00004.stacktrace", std::string(kGood).substr(0, 60)},  // truncated
      {"00003-00004.stacktrace", R"({"version":1,"rank":"3","world_size":4,"threads":[]})"},
      {"a-huge.stacktrace", R"({"version":1,"rank":1e999,"world_size":4,"threads":[]})"},
      {"b-missing.stacktrace", R"({"version":1,"rank":1})"},
      {"c-binary.stacktrace", std::string("\x00\xff\xfe\x7f{\"\x01", 7)},
      {"d-empty.stacktrace", ""},
  };
  for (const auto& [name, text] : bad) dir.write(name, text);
  dir.write("notes.txt", "not a stack file, ignored");
  ASSERT_EQ(::mkdir((dir.path() + "/e-folder.stacktrace").c_str(), 0755), 0);

  DumpMerge dump;
  std::string error;
  ASSERT_TRUE(merge_dump(dir.path(), MergeOptions{}, &dump, &error)) << error;
  EXPECT_EQ(dump.files_found, 8u);
  EXPECT_EQ(dump.files_merged, 2u);
  ASSERT_EQ(dump.warnings.size(), bad.size());
  for (const std::string& w : dump.warnings) {
    bool names_a_bad_file = false;
    for (const auto& [name, text] : bad) {
      if (w.rfind(dir.path() + "/" + name + ": ", 0) == 0) names_a_bad_file = true;
    }
    EXPECT_TRUE(names_a_bad_file) << w;
    EXPECT_NE(w.find("; file skipped"), std::string::npos) << w;
  }
  EXPECT_NE(dump.warnings[1].find("rank: expected an integer, got string"), std::string::npos)
      << dump.warnings[1];
  EXPECT_EQ(dump.merged.world_size, 4u);
  EXPECT_EQ(dump.merged.ranks_with_file.to_vector(), (std::vector<int>{0, 2}));
}

TEST(StackFileLoader, DuplicateRankIsSkippedWithAMessage) {
  TestFolder dir;
  dir.write("00001-00004.stacktrace", with_rank(1));
  dir.write("copy-of-1.stacktrace", with_rank(1));
  DumpMerge dump;
  std::string error;
  ASSERT_TRUE(merge_dump(dir.path(), MergeOptions{}, &dump, &error)) << error;
  ASSERT_EQ(dump.warnings.size(), 1u);
  EXPECT_EQ(dump.warnings[0], dir.path() + "/copy-of-1.stacktrace: rank 1 was already read from " +
                                  dir.path() + "/00001-00004.stacktrace; file skipped");
}

TEST(StackFileLoader, EmptyOrInvalidFolderIsAnError) {
  TestFolder dir;
  DumpMerge dump;
  std::string error;
  EXPECT_FALSE(merge_dump(dir.path(), MergeOptions{}, &dump, &error));
  EXPECT_EQ(error, "no .stacktrace file in " + dir.path());
  dir.write("x.stacktrace", "garbage");
  DumpMerge dump2;
  EXPECT_FALSE(merge_dump(dir.path(), MergeOptions{}, &dump2, &error));
  EXPECT_EQ(error, "none of the 1 .stacktrace file(s) in " + dir.path() + " could be read");
  DumpMerge dump3;
  EXPECT_FALSE(merge_dump(dir.path() + "/nope", MergeOptions{}, &dump3, &error));
  EXPECT_EQ(error, "cannot open folder " + dir.path() + "/nope: No such file or directory");
}

TEST(StackFileLoader, ManyFilesKeepOrderWithSeveralWorkers) {
  TestFolder dir;
  std::vector<std::string> paths;
  for (int r = 0; r < 4; ++r) {
    char name[32];
    std::snprintf(name, sizeof(name), "%05d-00004.stacktrace", r);
    paths.push_back(dir.write(name, with_rank(r)));
  }
  LoadOptions options;
  options.threads = 3;
  std::vector<int> ranks;
  const LoadSummary s = load_stack_files(
      paths, options,
      [&](const std::string&, const stack::ProcessStack& f) { ranks.push_back(f.rank); });
  EXPECT_EQ(s.loaded, 4u);
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 2, 3}));
}

TEST(StackFileLoader, ProgressBarOnStderrWhenAsked) {
  TestFolder dir;
  dir.write("00000-00004.stacktrace", with_rank(0));
  dir.write("00001-00004.stacktrace", with_rank(1));
  MergeOptions options;
  options.progress = true;
  DumpMerge dump;
  std::string error;
  testing::internal::CaptureStderr();
  ASSERT_TRUE(merge_dump(dir.path(), options, &dump, &error));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("\r[" + std::string(40, '#') + "] 2/2 stack files"), std::string::npos) << err;
  EXPECT_EQ(err.back(), '\n');
}

}  // namespace
}  // namespace xpu_timer::flamegraph
