#include "common/status_page.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "common/op_names.h"

namespace xpu_timer::proto {
namespace {

constexpr int kRank = 3;

RankIdentity identity() {
  RankIdentity id;
  id.rank = kRank;
  id.local_rank = 1;
  id.world_size = 8;
  id.local_world_size = 4;
  id.group_rank = 0;
  return id;
}

class StatusPageFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/xpu_status_page_test.XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
    path_ = dir_ + "/rank-3-" + std::to_string(getpid()) + ".page";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }

  std::unique_ptr<StatusPageFile> create() {
    std::string error;
    auto file = StatusPageFile::create(dir_, identity(), getpid(), &error);
    EXPECT_NE(file, nullptr) << error;
    return file;
  }
  std::unique_ptr<StatusPageFile> attach() {
    std::string error;
    auto file = StatusPageFile::attach(path_, getpid(), kRank, &error);
    EXPECT_NE(file, nullptr) << error;
    return file;
  }
  // Writes a page file by hand, as another build of the library might.
  void write_raw_page(const std::function<void(StatusPage*)>& edit = nullptr,
                      size_t size = sizeof(StatusPage)) {
    auto page = std::make_unique<StatusPage>();
    page->magic = kStatusPageMagic;
    page->version = kStatusPageVersion;
    page->page_bytes = sizeof(StatusPage);
    page->pid = getpid();
    page->rank = kRank;
    page->issued_total = 11;
    page->heartbeat_ns.store(1234);
    if (edit) edit(page.get());
    const int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const size_t n = std::min(size, sizeof(StatusPage));
    ASSERT_EQ(write(fd, page.get(), n), static_cast<ssize_t>(n));
    close(fd);
  }
  std::string attach_error(pid_t pid = getpid(), int rank = kRank) {
    std::string error;
    EXPECT_EQ(StatusPageFile::attach(path_, pid, rank, &error), nullptr);
    return error;
  }
  // The reason `reader` gives for refusing the page after `edit`.
  static std::string read_error(StatusPageFile* writer, const StatusPageFile& reader,
                                const std::function<void(StatusPage*)>& edit) {
    writer->begin_write();
    edit(writer->page());
    writer->end_write();
    StatusSnapshot snap;
    EXPECT_FALSE(reader.read(&snap));
    EXPECT_FALSE(snap.page_ok());
    EXPECT_TRUE(snap.heartbeat_ok());
    return snap.error();
  }

  std::string dir_, path_;
};

TEST_F(StatusPageFileTest, CreateAttachReadRoundTrip) {
  auto writer = create();
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(writer->path(), path_);
  const StatusPage* header = writer->page();
  EXPECT_EQ(header->magic, kStatusPageMagic);
  EXPECT_EQ(header->version, kStatusPageVersion);
  EXPECT_EQ(header->page_bytes, sizeof(StatusPage));
  EXPECT_EQ(header->pid, getpid());
  EXPECT_EQ(header->local_rank, 1);
  EXPECT_EQ(header->world_size, 8);
  EXPECT_EQ(header->local_world_size, 4);
  EXPECT_GT(header->created_mono_ns, 0u);
  EXPECT_EQ(header->heartbeat_ns.load(), header->created_mono_ns);

  writer->begin_write();
  StatusPage* p = writer->page();
  p->issued_total = 11;
  p->completed_total = 10;
  p->inflight_count = 1;
  p->oldest_inflight.name = static_cast<uint16_t>(OpName::kAllReduce);
  p->oldest_inflight.kind = static_cast<uint8_t>(OpKind::kNccl);
  p->oldest_inflight.seq = 11;
  p->ncomms = 1;
  p->comms[0] = CommSlot{0xabc, 8, 3, 11, 10, 0, 0, {}};
  p->nmetrics = 1;
  p->metrics[0].name = static_cast<uint16_t>(OpName::kAllReduce);
  p->metrics[0].algo = static_cast<uint8_t>(NcclAlgo::kRing);
  p->metrics[0].count = 10;
  writer->end_write();
  writer->heartbeat(5678);

  auto reader = attach();
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->page(), nullptr) << "an attached page is not writable";
  StatusSnapshot snap;
  ASSERT_TRUE(reader->read(&snap)) << snap.error();
  EXPECT_TRUE(snap.page_ok());
  EXPECT_EQ(snap.error(), "");
  EXPECT_TRUE(snap.heartbeat_ok());
  EXPECT_EQ(snap.heartbeat_ns(), 5678u);
  const StatusPage& s = snap.page();
  EXPECT_EQ(s.issued_total, 11u);
  EXPECT_EQ(s.completed_total, 10u);
  EXPECT_EQ(s.inflight_count, 1u);
  EXPECT_EQ(s.oldest_inflight.seq, 11u);
  ASSERT_EQ(s.ncomms, 1u);
  EXPECT_EQ(s.comms[0].comm_hash, 0xabcu);
  EXPECT_EQ(s.comms[0].completed_seq, 10u);
  ASSERT_EQ(s.nmetrics, 1u);
  EXPECT_EQ(s.metrics[0].count, 10u);

  // The rank's normal exit removes the file; the supervisor's mapping stays.
  writer->unlink();
  struct stat st;
  EXPECT_NE(stat(path_.c_str(), &st), 0);
  writer->unlink();  // idempotent
  ASSERT_TRUE(reader->read(&snap)) << snap.error();
  EXPECT_EQ(snap.page().issued_total, 11u);
}

TEST_F(StatusPageFileTest, CommNamesAreReadNulTerminatedAndPrintableOrAsUnknown) {
  auto writer = create();
  ASSERT_NE(writer, nullptr);
  writer->begin_write();
  StatusPage* p = writer->page();
  p->ncomms = 4;
  for (uint32_t i = 0; i < 4; ++i) p->comms[i] = CommSlot{i + 1, 8, 3, 1, 1, 0, 0, {}};
  std::memcpy(p->comms[0].name, "tp_group\0junk", 13);
  std::memset(p->comms[1].name, 'x', kCommNameBytes);  // no NUL: a hostile or torn writer
  std::memcpy(p->comms[2].name, "a\x01\xff", 4);       // bytes our writer never puts there
  std::memset(p->comms[3].name, 'y', kCommNameBytes - 1);
  // Past ncomms: not read at all.
  std::memset(p->comms[4].name, 'z', kCommNameBytes);
  writer->end_write();

  auto reader = attach();
  ASSERT_NE(reader, nullptr);
  StatusSnapshot snap;
  ASSERT_TRUE(reader->read(&snap)) << "a bad name is not a bad page: " << snap.error();
  const StatusPage& s = snap.page();
  EXPECT_STREQ(s.comms[0].name, "tp_group");
  EXPECT_EQ(s.comms[0].name[9], '\0') << "the bytes after the NUL are cleared";
  EXPECT_STREQ(s.comms[1].name, "");
  EXPECT_STREQ(s.comms[2].name, "a??");
  EXPECT_EQ(std::string(s.comms[3].name), std::string(kCommNameBytes - 1, 'y'));
}

// A range's kind is one the reader knows: anything else is a plain range,
// never a traced function.
TEST_F(StatusPageFileTest, UnknownRangeKindsAreReadAsNvtxRanges) {
  auto writer = create();
  ASSERT_NE(writer, nullptr);
  writer->begin_write();
  StatusPage* p = writer->page();
  p->nranges = 3;
  p->ranges[1].kind = static_cast<uint32_t>(RangeKind::kPythonFunction);
  p->ranges[2].kind = 0xdead;
  writer->end_write();
  auto reader = attach();
  ASSERT_NE(reader, nullptr);
  StatusSnapshot snap;
  ASSERT_TRUE(reader->read(&snap)) << snap.error();
  EXPECT_EQ(snap.page().ranges[1].kind, static_cast<uint32_t>(RangeKind::kPythonFunction));
  EXPECT_EQ(snap.page().ranges[2].kind, static_cast<uint32_t>(RangeKind::kNvtx));
}

TEST_F(StatusPageFileTest, DestroyingTheWriterRemovesItsFile) {
  create();  // destroyed at once
  struct stat st;
  EXPECT_NE(stat(path_.c_str(), &st), 0);
}

TEST_F(StatusPageFileTest, CreateReplacesAStaleFileOfTheSameName) {
  write_raw_page([](StatusPage* p) { p->issued_total = 99; });
  auto stale = attach();
  ASSERT_NE(stale, nullptr);
  auto writer = create();
  ASSERT_NE(writer, nullptr);
  StatusSnapshot snap;
  ASSERT_TRUE(stale->read(&snap)) << "the old mapping was not truncated: " << snap.error();
  EXPECT_EQ(snap.page().issued_total, 99u);
  auto fresh = attach();
  ASSERT_NE(fresh, nullptr);
  ASSERT_TRUE(fresh->read(&snap)) << snap.error();
  EXPECT_EQ(snap.page().issued_total, 0u);
}

TEST_F(StatusPageFileTest, CreateFailuresNameTheCallAndErrno) {
  std::string error;
  EXPECT_EQ(StatusPageFile::create(dir_ + "/missing", identity(), getpid(), &error), nullptr);
  EXPECT_EQ(error, "open(" + dir_ + "/missing/rank-3-" + std::to_string(getpid()) +
                       ".page) failed: No such file or directory");
  EXPECT_EQ(
      StatusPageFile::create(dir_ + "/" + std::string(300, 'x'), identity(), getpid(), &error),
      nullptr);
  EXPECT_NE(error.find("is longer than 255 bytes"), std::string::npos) << error;
}

TEST_F(StatusPageFileTest, SeqlockHeldByTheWriterIsABusyRead) {
  auto writer = create();
  auto reader = attach();
  ASSERT_TRUE(writer && reader);
  writer->begin_write();
  writer->page()->issued_total = 7;
  writer->heartbeat(42);
  StatusSnapshot snap;
  EXPECT_FALSE(reader->read(&snap));
  EXPECT_FALSE(snap.page_ok());
  EXPECT_EQ(snap.error(), "busy: the writer held the seqlock through 64 attempts");
  // Liveness does not wait for the seqlock.
  EXPECT_TRUE(snap.heartbeat_ok());
  EXPECT_EQ(snap.heartbeat_ns(), 42u);
  writer->end_write();
  ASSERT_TRUE(reader->read(&snap)) << snap.error();
  EXPECT_EQ(snap.page().issued_total, 7u);
}

TEST_F(StatusPageFileTest, TruncatedFileIsAFailedReadNotACrash) {
  write_raw_page();
  auto reader = attach();
  ASSERT_NE(reader, nullptr);
  StatusSnapshot snap;
  ASSERT_TRUE(reader->read(&snap)) << snap.error();
  ASSERT_EQ(truncate(path_.c_str(), 0), 0);  // the rank (or anyone) shrinks the file
  EXPECT_FALSE(reader->read(&snap));         // SIGBUS caught by the guard
  EXPECT_FALSE(snap.heartbeat_ok());
  EXPECT_EQ(snap.heartbeat_ns(), 0u);
  EXPECT_EQ(snap.error(), "truncated under the mapping (SIGBUS)");
  EXPECT_FALSE(reader->read(&snap));  // and again: the guard is re-armed
  EXPECT_FALSE(snap.page_ok());
}

TEST_F(StatusPageFileTest, AttachRefusesBadPagesWithAReason) {
  const std::string prefix = "status page " + path_ + ": ";
  write_raw_page([](StatusPage* p) { p->magic = 0; });
  EXPECT_EQ(attach_error(), prefix + "bad magic");
  write_raw_page([](StatusPage* p) { p->version = kStatusPageVersion + 1; });
  EXPECT_EQ(attach_error(), prefix + "protocol version " + std::to_string(kStatusPageVersion + 1) +
                                ", supervisor speaks " + std::to_string(kStatusPageVersion) +
                                " (stale libxpu_timer_inject.so?)");
  write_raw_page([](StatusPage* p) { p->page_bytes = 12; });
  EXPECT_EQ(attach_error(), prefix + "page_bytes 12 != " + std::to_string(sizeof(StatusPage)));
  write_raw_page();
  EXPECT_EQ(attach_error(getpid() + 1), prefix + "pid " + std::to_string(getpid()) +
                                            " != registered pid " + std::to_string(getpid() + 1));
  EXPECT_EQ(attach_error(getpid(), 4), prefix + "rank 3 != registered rank 4");
  write_raw_page(nullptr, 100);
  EXPECT_EQ(attach_error(),
            prefix + "too small (100 bytes, expected " + std::to_string(sizeof(StatusPage)) + ")");
  unlink(path_.c_str());
  EXPECT_EQ(attach_error(), prefix + "cannot open: No such file or directory");
  ASSERT_EQ(mkdir(path_.c_str(), 0700), 0);
  EXPECT_EQ(attach_error(), prefix + "not a regular file");
  rmdir(path_.c_str());
  const std::string target = dir_ + "/target.page";
  ASSERT_EQ(symlink(target.c_str(), path_.c_str()), 0);
  EXPECT_NE(attach_error().find("cannot open"), std::string::npos) << "symlinks are not followed";
  unlink(path_.c_str());
}

TEST_F(StatusPageFileTest, ReadRejectsOutOfRangeCountsAndEnums) {
  auto writer = create();
  ASSERT_NE(writer, nullptr);
  auto reader_file = attach();
  ASSERT_NE(reader_file, nullptr);
  const StatusPageFile& reader = *reader_file;
  EXPECT_EQ(read_error(writer.get(), reader, [](StatusPage* p) { p->ncomms = kMaxComms + 1; }),
            "ncomms 65 > 64");
  EXPECT_EQ(read_error(writer.get(), reader,
                       [](StatusPage* p) {
                         p->ncomms = 0;
                         p->nmetrics = 0xffffffffu;
                       }),
            "nmetrics 4294967295 > 256");
  EXPECT_EQ(read_error(writer.get(), reader,
                       [](StatusPage* p) {
                         p->nmetrics = 2;
                         p->metrics[1].algo = 200;
                       }),
            "metrics[1].algo 200 is not an NcclAlgo");
  EXPECT_EQ(read_error(writer.get(), reader,
                       [](StatusPage* p) {
                         p->metrics[1].algo = 0;
                         p->metrics[0].name = 31;  // between the GEMM and NCCL names
                       }),
            "metrics[0].name 31 is not an OpName");
  EXPECT_EQ(read_error(writer.get(), reader,
                       [](StatusPage* p) {
                         p->metrics[0].name = 0;
                         p->oldest_inflight.kind = 9;
                       }),
            "oldest_inflight.kind 9 is not an OpKind");
  EXPECT_EQ(read_error(writer.get(), reader,
                       [](StatusPage* p) {
                         p->oldest_inflight.kind = 0;
                         p->last_completed.dtype = 12;
                       }),
            "last_completed.dtype 12 is not a DType");
  EXPECT_EQ(read_error(writer.get(), reader,
                       [](StatusPage* p) {
                         p->last_completed.dtype = 0;
                         p->rank = 5;
                       }),
            "header changed since attach: rank 5 != registered rank 3");
  // Slots past nmetrics are not looked at.
  writer->begin_write();
  writer->page()->rank = kRank;
  writer->page()->nmetrics = 1;
  writer->page()->metrics[1].algo = 200;
  writer->end_write();
  StatusSnapshot snap;
  EXPECT_TRUE(reader.read(&snap)) << snap.error();
}

TEST(HeartbeatAge, CountsFromTheHeartbeatOrTheRegistrationWhicheverIsLater) {
  EXPECT_EQ(heartbeat_age_ns(1000, 400, 100), 600u);
  EXPECT_EQ(heartbeat_age_ns(1000, 100, 400), 600u);  // not late before it registered
  EXPECT_EQ(heartbeat_age_ns(1000, 0, 300), 700u);    // heartbeat unreadable
  EXPECT_EQ(heartbeat_age_ns(1000, 1200, 0), 0u);     // a time after now
  StatusSnapshot never_read;
  EXPECT_FALSE(never_read.heartbeat_ok());
  EXPECT_EQ(never_read.heartbeat_age_ns(1000, 250), 750u);
}

}  // namespace
}  // namespace xpu_timer::proto
