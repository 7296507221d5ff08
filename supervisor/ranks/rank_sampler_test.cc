#include "supervisor/ranks/rank_sampler.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "common/status_page.h"

namespace xpu_timer::supervisor {
namespace {

// A rank's background thread descheduled inside its page write holds the
// seqlock: the read waits it out instead of reporting the rank without a
// page. Here the "writer" finishes its write during the reader's first pause.
TEST(RankSampler, ABusyPageIsReadAgainAfterThePause) {
  char dir[] = "/tmp/xpu_sampler_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  RankIdentity id;
  id.rank = 3;
  std::string error;
  auto writer = proto::StatusPageFile::create(dir, id, getpid(), &error);
  ASSERT_NE(writer, nullptr) << error;
  auto reader = proto::StatusPageFile::attach(writer->path(), getpid(), 3, &error);
  ASSERT_NE(reader, nullptr) << error;
  writer->begin_write();
  writer->page()->inflight_count = 2;
  writer->page()->issued_total = 7;
  int pauses = 0;
  proto::StatusSnapshot scratch;
  read_page(*reader, &scratch, [&] {
    if (++pauses == 1) writer->end_write();
  });
  EXPECT_EQ(pauses, 1) << "the first read saw the write in progress, the second its result";
  ASSERT_TRUE(scratch.page_ok()) << scratch.error();
  EXPECT_EQ(scratch.page().inflight_count, 2u);
  EXPECT_EQ(scratch.page().issued_total, 7u);

  // A writer that never finishes: a bounded number of pauses, then busy.
  writer->begin_write();
  pauses = 0;
  read_page(*reader, &scratch, [&] { ++pauses; });
  EXPECT_EQ(pauses, 10);
  EXPECT_FALSE(scratch.page_ok());
  EXPECT_EQ(scratch.error().rfind("busy", 0), 0u) << scratch.error();
  writer->end_write();
  const std::string path = writer->path();
  reader.reset();
  writer.reset();
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace xpu_timer::supervisor
