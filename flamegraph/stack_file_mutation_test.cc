// Deterministic mutation testing of the stack-file reader, stack::parse_stack_file
// (the libFuzzer target stack/fuzz/stack_file_fuzz.cc does the same guided, in a
// clang build): 10,000 variants of a valid file, each decoded and, when it
// decodes, merged. None may crash, and every refusal must say why.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "flamegraph/bench/synthetic_dump.h"
#include "flamegraph/folded_writer.h"
#include "flamegraph/merged_stacks.h"
#include "flamegraph/svg_renderer.h"
#include "flamegraph/test_folder.h"
#include "stack/stack_file.h"

namespace xpu_timer::flamegraph {
namespace {

const char* const kTokens[] = {
    "null", "true",       "-1",         "1e999",       "18446744073709551616",
    "\"\"", "[]",         "{}",         "\"\\u0000\"", "\"\\ud800\"",
    ",",    ":",          "\"",         "[[[[",        "}}}}",
    "0.5",  "\"native\"", "\"python\"", "\xff\xfe"};

std::string mutate(std::string s, std::mt19937* rng) {
  std::uniform_int_distribution<int> op(0, 5);
  const int rounds = 1 + static_cast<int>((*rng)() % 4);
  for (int r = 0; r < rounds && !s.empty(); ++r) {
    const size_t at = (*rng)() % s.size();
    switch (op(*rng)) {
      case 0:
        s[at] = static_cast<char>((*rng)() & 0xff);
        break;  // random byte
      case 1:
        s.resize(at);
        break;  // truncate
      case 2:
        s.erase(at, 1 + (*rng)() % 16);
        break;  // delete a run
      case 3:
        s.insert(at, kTokens[(*rng)() % (sizeof(kTokens) / sizeof(kTokens[0]))]);
        break;
      case 4:
        s.insert(at, s.substr((*rng)() % s.size(), (*rng)() % 64));
        break;    // duplicate
      default: {  // replace a digit run by a huge or negative number
        const size_t d = s.find_first_of("0123456789", at);
        if (d != std::string::npos) s.insert(d, (*rng)() % 2 ? "-" : "99999999999");
      }
    }
  }
  return s;
}

TEST(StackFileMutation, TenThousandVariantsNeverCrash) {
  TestFolder dir;
  SyntheticDumpSpec spec;
  spec.world_size = 2;
  spec.threads_per_rank = 3;
  spec.leak_rank = 1;
  std::string error;
  ASSERT_TRUE(write_synthetic_dump(dir.path(), spec, &error)) << error;
  const std::string seed = TestFolder::read(dir.path() + "/00001-00002.stacktrace");
  ASSERT_GT(seed.size(), 1000u);

  std::mt19937 rng(12345);  // fixed: a failure reproduces
  int decoded = 0;
  StackMerger merger;
  for (int i = 0; i < 10000; ++i) {
    const std::string text = mutate(seed, &rng);
    std::string why;
    if (const auto f = stack::parse_stack_file(text, &why)) {
      ++decoded;
      merger.add(*f);
    } else {
      ASSERT_FALSE(why.empty()) << "variant " << i;
    }
  }
  const MergeResult m = merger.finish();
  for (const MergedView& v : m.views) {
    folded_stacks(v);
    render_svg(v, m.labels, SvgOptions{});
  }
  // Some variants only touch string contents: they must still decode.
  EXPECT_GT(decoded, 100);
}

}  // namespace
}  // namespace xpu_timer::flamegraph
