// Malformed dump files are skipped with exactly one warning each, naming the
// file and the reason, while the good ones load.
#include "timeline/dump_loader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "timeline/test_dumps.h"

namespace xpu_timer::timeline {
namespace {

using recorder::RingHeader;
using testing::JobSpec;
using testing::TempDir;

template <typename T>
std::string patched(std::string image, size_t offset, T value) {
  std::memcpy(&image[offset], &value, sizeof(value));
  return image;
}

std::set<int> ranks_of(const LoadedDumps& d) {
  std::set<int> out;
  for (const RankTimeline& t : d.ranks) out.insert(t.rank);
  return out;
}

TEST(DumpLoader, MalformedFilesAreSkippedWithOneWarningEach) {
  TempDir dir;
  JobSpec spec;
  testing::write_job(dir.path(), spec, false);
  const std::string good0 = testing::image_bytes(spec, 0);
  ASSERT_EQ(good0.size(), recorder::ring_file_bytes(32));
  // Rank 2's file cut in half, as a full disk would leave it.
  const std::string r2 = dir.write("00002-00004.timeline", good0.substr(0, good0.size() / 2));
  std::mt19937 rng(7);
  std::string garbage(5000, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  const std::string paths[] = {
      dir.write("capacity.timeline",
                patched<uint32_t>(good0, offsetof(RingHeader, capacity), 1u << 30)),
      dir.subdir("dir.timeline"),
      dir.write("empty.timeline", ""),
      // A FIFO: refused at once, never waited on for a writer (before, the
      // tool hung here for ever).
      dir.path() + "/fifo.timeline",
      dir.write("garbage.timeline", garbage),
      dir.write("head.timeline", patched<uint64_t>(good0, offsetof(RingHeader, head), 1ull << 62)),
      dir.write("rank.timeline", patched<int32_t>(good0, offsetof(RingHeader, rank), -7)),
      dir.write("version.timeline", patched<uint32_t>(good0, offsetof(RingHeader, version), 99)),
  };
  ASSERT_EQ(::mkfifo(paths[3].c_str(), 0600), 0);
  LoadedDumps d;
  load_dumps({DumpSource{dir.path(), -1}}, &d);
  EXPECT_EQ(ranks_of(d), (std::set<int>{0, 1, 3}));
  EXPECT_EQ(d.files_found, 12u);
  const std::vector<std::string> expected = {
      r2 + ": ring file has " + std::to_string(good0.size() / 2) + " bytes, its header needs " +
          std::to_string(good0.size()) + "; skipped",
      paths[0] + ": ring capacity is not a power of two within limits; skipped",
      paths[1] + ": not a regular file (a folder); skipped",
      paths[2] + ": too short for a flight-recorder ring; skipped",
      paths[3] + ": not a regular file (a FIFO); skipped",
      paths[4] + ": not a flight-recorder ring (bad magic); skipped",
      paths[5] + ": none of its 32 record(s) is readable; skipped",
      paths[6] + ": rank -7 of world size 4 is out of range; skipped",
      paths[7] + ": ring format version 99, this build reads 1 to 4; skipped",
  };
  EXPECT_EQ(d.warnings, expected);
}

TEST(DumpLoader, HeaderWinsOverAnEditedNameAndDuplicatesAreSkipped) {
  TempDir dir;
  JobSpec spec;
  spec.last_rank = 1;
  testing::write_job(dir.path(), spec, false);
  ASSERT_EQ(::rename((dir.path() + "/00001-00004.timeline").c_str(),
                     (dir.path() + "/00005-00004.timeline").c_str()),
            0);
  const std::string copy = dir.write("zz.timeline", testing::image_bytes(spec, 0));
  LoadedDumps d;
  load_dumps({DumpSource{dir.path(), -1}}, &d);
  EXPECT_EQ(ranks_of(d), (std::set<int>{0, 1}));
  EXPECT_EQ(d.warnings, (std::vector<std::string>{
                            dir.path() + "/00005-00004.timeline: its header says rank 1 of 4; "
                                         "using that",
                            copy + ": rank 0 was already loaded from " + dir.path() +
                                "/00000-00004.timeline; skipped"}));
}

TEST(DumpLoader, HangJsonIsReadAndABadOneIsReported) {
  TempDir dir;
  JobSpec spec;
  testing::write_job(dir.path(), spec, true);
  LoadedDumps d;
  load_dumps({DumpSource{dir.path(), -1}}, &d);
  ASSERT_TRUE(d.folders[0].verdict.has_value());
  const HangVerdict& v = *d.folders[0].verdict;
  EXPECT_TRUE(v.hung);
  EXPECT_DOUBLE_EQ(*v.detected_at_unix_s, 1700000005.5);
  ASSERT_NE(v.find(2), nullptr);
  EXPECT_EQ(v.find(2)->state, "missing");
  EXPECT_EQ(*v.find(2)->comm, testing::kComm);
  EXPECT_EQ(*v.find(2)->last_completed_seq, 5u);
  EXPECT_EQ(v.find(0)->op, "AllReduce");

  dir.write("hang.json", "{\"hung\": tru");
  load_dumps({DumpSource{dir.path(), -1}}, &d);
  EXPECT_FALSE(d.folders[0].verdict.has_value());
  EXPECT_EQ(d.warnings,
            std::vector<std::string>{dir.path() + "/hang.json: not valid JSON; no hang "
                                                  "verdict shown"});
  EXPECT_EQ(d.ranks.size(), 4u);
  dir.write("hang.json", R"({"hung": true, "ranks": [{"rank": "x"}, {"rank": 1, "comm": 5}]})");
  load_dumps({DumpSource{dir.path(), -1}}, &d);
  ASSERT_TRUE(d.folders[0].verdict.has_value());
  EXPECT_EQ(d.folders[0].verdict->ranks.size(), 1u);
  EXPECT_FALSE(d.folders[0].verdict->ranks[0].comm.has_value());
  EXPECT_EQ(d.warnings.size(), 1u);
}

// comms.json: what the supervisor writes reads back; entries that are not a
// 16-digit hash and a name are skipped; a file that is no list is one
// warning, and the dumps load all the same.
TEST(DumpLoader, CommNamesAreReadAndBadOnesSkippedOrReported) {
  TempDir dir;
  JobSpec spec;
  testing::write_job(dir.path(), spec, false);
  dir.write("comms.json", comm_names_text({{testing::kComm, "tp"}, {7, "default_pg"}}));
  LoadedDumps d;
  load_dumps({DumpSource{dir.path(), -1}}, &d);
  EXPECT_EQ(d.folders[0].comm_names,
            (std::map<uint64_t, std::string>{{testing::kComm, "tp"}, {7, "default_pg"}}));
  EXPECT_TRUE(d.warnings.empty());
  dir.write("comms.json", R"({"comms": [{"comm": "06543c4e36ee6c61", "name": "dp"},
      {"comm": "06543C4E36EE6C61", "name": "x"}, {"comm": "123", "name": "x"},
      {"comm": "0000000000000007"}, {"comm": 7, "name": "x"}, "tp",
      {"comm": "0000000000000008", "name": ""}]})");
  load_dumps({DumpSource{dir.path(), -1}}, &d);
  EXPECT_EQ(d.folders[0].comm_names, (std::map<uint64_t, std::string>{{testing::kComm, "dp"}}));
  EXPECT_TRUE(d.warnings.empty());
  for (const char* bad : {"{\"comms\": 5}", "[1, 2]", "{\"comms\": [", ""}) {
    dir.write("comms.json", bad);
    load_dumps({DumpSource{dir.path(), -1}}, &d);
    EXPECT_TRUE(d.folders[0].comm_names.empty()) << bad;
    EXPECT_EQ(d.warnings,
              std::vector<std::string>{dir.path() + "/comms.json: not a communicator list; "
                                                    "communicators unnamed"})
        << bad;
    EXPECT_EQ(d.ranks.size(), 4u);
  }
}

TEST(DumpLoader, SourceIsAFolderOrOneRankOfIt) {
  TempDir dir;
  testing::write_job(dir.path(), JobSpec{}, false);
  DumpSource s;
  std::string error;
  ASSERT_TRUE(parse_dump_source(dir.path(), &s, &error)) << error;
  EXPECT_EQ(s.rank, -1);
  ASSERT_TRUE(parse_dump_source(dir.path() + ":3", &s, &error)) << error;
  EXPECT_EQ(s.dir, dir.path());
  EXPECT_EQ(s.rank, 3);
  LoadedDumps d;
  load_dumps({s}, &d);
  EXPECT_EQ(ranks_of(d), std::set<int>{3});
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_FALSE(parse_dump_source(dir.path() + ":x", &s, &error));
  EXPECT_EQ(error, "'" + dir.path() + ":x': expected DIR or DIR:RANK with RANK a number");
  EXPECT_FALSE(parse_dump_source(dir.path() + "/none", &s, &error));
  EXPECT_EQ(error, "'" + dir.path() + "/none' is not a folder");
  load_dumps({DumpSource{dir.path(), 9}}, &d);
  EXPECT_TRUE(d.ranks.empty());
  EXPECT_EQ(d.warnings, std::vector<std::string>{"no readable dump of rank 9 in " + dir.path()});
}

}  // namespace
}  // namespace xpu_timer::timeline
