#include "common/file_reader.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace xpu_timer {
namespace {

class FileReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/xpu_file_reader_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(FileReaderTest, ReadsARegularFileWhole) {
  const std::string text(100000, 'x');
  std::string out, error;
  EXPECT_EQ(read_regular_file(write("a", text), 100000, &out, &error), ReadFileStatus::kOk);
  EXPECT_EQ(out, text);
}

TEST_F(FileReaderTest, RefusesMoreThanTheLimit) {
  std::string out, error;
  EXPECT_EQ(read_regular_file(write("a", std::string(101, 'x')), 100, &out, &error),
            ReadFileStatus::kTooLarge);
  EXPECT_NE(error.find("too large"), std::string::npos) << error;
  EXPECT_TRUE(out.empty());
}

TEST_F(FileReaderTest, AMissingFileIsMissing) {
  std::string out, error;
  EXPECT_EQ(read_regular_file(dir_ + "/nothing", 100, &out, &error), ReadFileStatus::kMissing);
  EXPECT_EQ(read_regular_file(dir_ + "/nothing/below", 100, &out, &error),
            ReadFileStatus::kMissing);
}

// A FIFO with no writer would block open(2) and read(2) for ever: the reader
// must refuse it at once. (If it blocked, this test would hang until ctest's
// timeout, which is a failure too.)
TEST_F(FileReaderTest, RefusesAFifoWithoutBlocking) {
  const std::string path = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::string out, error;
  EXPECT_EQ(read_regular_file(path, 100, &out, &error), ReadFileStatus::kNotRegular);
  EXPECT_NE(error.find("FIFO"), std::string::npos) << error;
}

TEST_F(FileReaderTest, RefusesAFolderAndADevice) {
  std::string out, error;
  EXPECT_EQ(read_regular_file(dir_, 100, &out, &error), ReadFileStatus::kNotRegular);
  EXPECT_NE(error.find("folder"), std::string::npos) << error;
  EXPECT_EQ(read_regular_file("/dev/zero", 100, &out, &error), ReadFileStatus::kNotRegular);
  EXPECT_NE(error.find("character device"), std::string::npos) << error;
}

// /proc files say size 0: they are read to their end all the same.
TEST_F(FileReaderTest, ReadsProcFilesWhoseSizeIsZero) {
  std::string out, error;
  ASSERT_EQ(read_regular_file("/proc/self/status", 1 << 20, &out, &error), ReadFileStatus::kOk)
      << error;
  EXPECT_NE(out.find("Pid:"), std::string::npos);
  // And still bounded.
  EXPECT_EQ(read_regular_file("/proc/self/status", 10, &out, &error), ReadFileStatus::kTooLarge);
}

}  // namespace
}  // namespace xpu_timer
