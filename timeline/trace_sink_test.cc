#include "timeline/trace_sink.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace xpu_timer::timeline {
namespace {

void fill(TraceSink* sink) {
  sink->begin();
  // About 3 MB: flushed to a file several times along the way.
  for (int i = 0; i < 40000; ++i) {
    sink->add({{"name", "e" + std::to_string(i)}, {"ph", "X"}, {"pad", std::string(60, 'x')}});
  }
  sink->add({{"name", std::string("bad utf-8 \xff")}, {"ph", "i"}});
  sink->end({{"n", 1}});
}

TEST(TraceSink, AFileGetsExactlyTheInMemoryDocument) {
  TraceSink memory;
  fill(&memory);
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  TraceSink file(f);
  fill(&file);
  EXPECT_TRUE(file.ok());
  EXPECT_EQ(file.events(), 40001u);
  EXPECT_LT(file.text().size(), 1u << 20);  // it did not all stay in memory
  std::rewind(f);
  std::string got;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) got.append(buf, n);
  std::fclose(f);
  EXPECT_GT(got.size(), 3000000u);
  EXPECT_EQ(got, memory.text());
  const nlohmann::json j = nlohmann::json::parse(got);
  EXPECT_EQ(j["traceEvents"].size(), 40001u);
  EXPECT_EQ(j["traceEvents"][40000]["name"], "bad utf-8 \xEF\xBF\xBD");
  EXPECT_EQ(j["otherData"]["n"], 1);
}

TEST(TraceSink, AFailedWriteIsReported) {
  std::FILE* f = std::fopen("/dev/full", "w");
  if (f == nullptr) GTEST_SKIP() << "/dev/full not available";
  TraceSink sink(f);
  fill(&sink);
  EXPECT_FALSE(sink.ok());
  EXPECT_NE(sink.write_errno(), 0);
  std::fclose(f);
}

}  // namespace
}  // namespace xpu_timer::timeline
