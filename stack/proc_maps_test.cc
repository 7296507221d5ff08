#include "stack/proc_maps.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

#include "stack/proc_info.h"

namespace xpu_timer::stack {
namespace {

TEST(ProcMaps, ParsesLinesWithPathsSpacesAndPseudoNames) {
  auto maps = parse_maps(
      "55d0c0a00000-55d0c0a21000 r--p 00000000 fd:01 1234      /usr/bin/my prog\n"
      "7f0000001000-7f0000002000 r-xp 00001000 fd:01 99  /lib/libc.so.6 (deleted)\n"
      "7ffc12300000-7ffc12321000 rw-p 00000000 00:00 0                          [stack]\n"
      "7f0000003000-7f0000004000 rw-p 00000000 00:00 0\n"
      "garbage line\n"
      "zz-10 r--p 0 0 0\n");
  ASSERT_EQ(maps.size(), 4u);
  EXPECT_EQ(maps[0].start, 0x55d0c0a00000u);
  EXPECT_EQ(maps[0].end, 0x55d0c0a21000u);
  EXPECT_EQ(maps[0].perms, "r--p");
  EXPECT_EQ(maps[0].path, "/usr/bin/my prog");
  EXPECT_EQ(maps[1].offset, 0x1000u);
  EXPECT_EQ(maps[1].path, "/lib/libc.so.6 (deleted)");
  EXPECT_EQ(maps[2].path, "[stack]");
  EXPECT_EQ(maps[3].path, "");
  EXPECT_EQ(mapping_base(maps, "/usr/bin/my prog"), 0x55d0c0a00000u);
  EXPECT_FALSE(mapping_base(maps, "/lib/libc.so.6 (deleted)").has_value());
}

TEST(ProcMaps, ReadsOwnMaps) {
  auto maps = read_maps(getpid());
  ASSERT_TRUE(maps.has_value());
  bool found_stack = false;
  for (const auto& m : *maps) found_stack = found_stack || m.path == "[stack]";
  EXPECT_TRUE(found_stack);
}

TEST(ProcMaps, FuzzedInputNeverCrashes) {
  std::mt19937 rng(42);
  const std::string alphabet = "0123456789abcdefxz- :/\n()[]rwxp";
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 200, ' ');
    for (auto& c : s) c = alphabet[rng() % alphabet.size()];
    for (const auto& m : parse_maps(s)) EXPECT_LE(m.start, m.end);
  }
}

TEST(ProcInfo, StatStateFollowsLastParenthesis) {
  EXPECT_EQ(parse_stat_state("123 (a) b) c) S 1 2 3"), 'S');
  EXPECT_EQ(parse_stat_state("123 (x) D 1"), 'D');
  EXPECT_EQ(parse_stat_state("garbage"), '?');
  EXPECT_EQ(parse_stat_state("1 (x)"), '?');
}

}  // namespace
}  // namespace xpu_timer::stack
