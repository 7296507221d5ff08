#include "supervisor/status_page_mapping.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>

namespace xpu_timer::supervisor {
namespace {

class StatusPageMappingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/xpu_page_test.XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
    path_ = dir_ + "/rank-3-" + std::to_string(getpid()) + ".page";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  // Writes a page file as the injected library would.
  void write_page(const std::function<void(proto::StatusPage*)>& edit = nullptr,
                  size_t size = sizeof(proto::StatusPage)) {
    auto page = std::make_unique<proto::StatusPage>();
    page->magic = proto::kStatusPageMagic;
    page->version = proto::kProtocolVersion;
    page->page_bytes = sizeof(proto::StatusPage);
    page->pid = getpid();
    page->rank = 3;
    page->issued_total = 11;
    page->heartbeat_ns.store(1234);
    if (edit) edit(page.get());
    const int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, page.get(), std::min(size, sizeof(proto::StatusPage))),
              static_cast<ssize_t>(std::min(size, sizeof(proto::StatusPage))));
    close(fd);
  }
  std::string open_error(pid_t pid = getpid(), int rank = 3) {
    std::string error;
    EXPECT_EQ(StatusPageMapping::open(path_, pid, rank, &error), nullptr);
    return error;
  }
  std::string dir_, path_;
};

TEST_F(StatusPageMappingTest, ValidPageReads) {
  write_page();
  std::string error;
  auto m = StatusPageMapping::open(path_, getpid(), 3, &error);
  ASSERT_NE(m, nullptr) << error;
  auto copy = std::make_unique<proto::StatusPage>();
  ASSERT_TRUE(m->read(copy.get()));
  EXPECT_EQ(copy->issued_total, 11u);
  uint64_t beat = 0;
  ASSERT_TRUE(m->heartbeat(&beat));
  EXPECT_EQ(beat, 1234u);
}

TEST_F(StatusPageMappingTest, RefusesBadPages) {
  write_page([](proto::StatusPage* p) { p->magic = 0; });
  EXPECT_EQ(open_error(), "status page " + path_ + ": bad magic");
  write_page([](proto::StatusPage* p) { p->version = 7; });
  EXPECT_EQ(open_error(),
            "status page " + path_ +
                ": protocol version 7, supervisor speaks " +
                std::to_string(proto::kProtocolVersion) + " (stale libxpu_timer_inject.so?)");
  write_page([](proto::StatusPage* p) { p->page_bytes = 12; });
  EXPECT_NE(open_error().find("page_bytes 12"), std::string::npos);
  write_page();
  EXPECT_NE(open_error(getpid() + 1).find("!= registered pid"), std::string::npos);
  EXPECT_NE(open_error(getpid(), 4).find("rank 3 != registered rank 4"), std::string::npos);
  write_page(nullptr, 100);
  EXPECT_NE(open_error().find("too small (100 bytes"), std::string::npos);
  unlink(path_.c_str());
  EXPECT_NE(open_error().find("cannot open"), std::string::npos);
  ASSERT_EQ(mkdir(path_.c_str(), 0700), 0);
  EXPECT_NE(open_error().find("not a regular file"), std::string::npos);
  rmdir(path_.c_str());
}

TEST_F(StatusPageMappingTest, TruncatedFileIsAFailedReadNotACrash) {
  write_page();
  std::string error;
  auto m = StatusPageMapping::open(path_, getpid(), 3, &error);
  ASSERT_NE(m, nullptr) << error;
  ASSERT_EQ(truncate(path_.c_str(), 0), 0);  // the rank (or anyone) shrinks the file
  auto copy = std::make_unique<proto::StatusPage>();
  EXPECT_FALSE(m->read(copy.get()));  // SIGBUS caught by the guard
  uint64_t beat = 0;
  EXPECT_FALSE(m->heartbeat(&beat));
  EXPECT_FALSE(m->read(copy.get()));  // and again: the guard is re-armed
}

}  // namespace
}  // namespace xpu_timer::supervisor
