#include "stack/stack_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace xpu_timer::stack {
namespace {

ProcessStack sample() {
  ProcessStack s;
  s.rank = 3;
  s.world_size = 8;
  s.pid = 1234;
  s.host = "node1";
  s.process_state = "S (sleeping)";
  s.collected_at = 1763800000.125;
  s.stopped_ms = 12.5;
  s.python_version = "3.12.1";
  s.errors = {"thread 7 did not stop"};
  ThreadStack t;
  t.tid = 1234;
  t.name = "python3";
  t.state = 'S';
  t.holds_gil = true;
  NativeFrame n;
  n.pc = 0x7f0012345678;
  n.func = "ncclAllReduce";
  n.module = "/path/libnccl.so.2";
  n.offset = 0x1234;
  n.file = "enqueue.cc";
  n.line = 12;
  t.native.push_back(n);
  NativeFrame unknown;
  unknown.pc = 0x10;
  t.native.push_back(unknown);
  t.python.push_back({"train_step", "/x/train.py", 42, true});
  MixedFrame m;
  m.python = true;
  m.func = "train_step";
  m.file = "/x/train.py";
  m.line = 42;
  t.mixed.push_back(m);
  s.threads.push_back(t);
  ThreadStack other;
  other.tid = 1240;
  other.name = "worker";
  other.state = 'D';
  s.threads.push_back(other);
  return s;
}

TEST(StackFile, NameIsRankAndWorldSizeZeroPadded) {
  EXPECT_EQ(stack_file_name(3, 8), "00003-00008.stacktrace");
  EXPECT_EQ(stack_file_name(1023, 10000), "01023-10000.stacktrace");
}

TEST(StackFile, JsonFollowsTheContract) {
  auto j = to_json(sample());
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["rank"], 3);
  EXPECT_EQ(j["python_version"], "3.12.1");
  const auto& t = j["threads"][0];
  EXPECT_EQ(t["state"], "S");
  EXPECT_EQ(t["holds_gil"], true);
  EXPECT_EQ(t["native"][0]["pc"], "0x7f0012345678");
  EXPECT_EQ(t["native"][0]["offset"], "0x1234");
  EXPECT_EQ(t["native"][0]["inlined"], false);
  EXPECT_TRUE(t["native"][1]["file"].is_null());
  EXPECT_TRUE(t["native"][1]["line"].is_null());
  EXPECT_EQ(t["native"][1]["func"], "??");
  EXPECT_EQ(t["python"][0]["line"], 42);
  EXPECT_EQ(t["mixed"][0]["kind"], "python");
  EXPECT_TRUE(j["threads"][1]["holds_gil"].is_null());
}

TEST(StackFile, WriteThenLoadRoundTrips) {
  char dir[] = "/tmp/xpu_stack_file_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/" + stack_file_name(3, 8);
  std::string err;
  ASSERT_TRUE(write_stack_file(sample(), path, &err)) << err;
  auto loaded = load_stack_file(path, &err);
  ASSERT_TRUE(loaded) << err;
  EXPECT_EQ(to_json(*loaded), to_json(sample()));
  unlink(path.c_str());
  rmdir(dir);
}

TEST(StackFile, MalformedFilesGiveOneLine) {
  char dir[] = "/tmp/xpu_stack_file_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/bad.stacktrace";
  for (const char* text :
       {"{", "[]", "{\"version\":1}", "{\"version\":1,\"rank\":\"x\"}",
        "{\"version\":1,\"rank\":0,\"world_size\":1,\"pid\":1,\"threads\":[{}]}"}) {
    std::ofstream(path) << text;
    std::string err;
    EXPECT_FALSE(load_stack_file(path, &err).has_value()) << text;
    EXPECT_NE(err.find(path), std::string::npos) << err;
  }
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace xpu_timer::stack
