#include "stack/stack_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

TEST(StackFile, MalformedFilesGiveOneLineStartingWithThePath) {
  char dir[] = "/tmp/xpu_stack_file_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string path = std::string(dir) + "/bad.stacktrace";
  for (const char* text :
       {"{", "[]", "{\"version\":1}", "{\"version\":1,\"rank\":\"x\"}",
        "{\"version\":1,\"rank\":0,\"world_size\":1,\"pid\":1,\"threads\":[1]}"}) {
    std::ofstream(path) << text;
    std::string err;
    EXPECT_FALSE(load_stack_file(path, &err).has_value()) << text;
    EXPECT_EQ(err.rfind(path + ": ", 0), 0u) << err;
  }
  std::ofstream(path) << "{}";
  std::string err;
  EXPECT_FALSE(load_stack_file(path, &err, /*max_bytes=*/1).has_value());
  EXPECT_EQ(err, path + ": too large (2 bytes, at most 1)");
  EXPECT_FALSE(load_stack_file(dir, &err).has_value());
  EXPECT_EQ(err, std::string(dir) + ": not a regular file (a folder)");
  // A FIFO in a file's place is refused at once, not waited on for a writer.
  unlink(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0) << strerror(errno);
  EXPECT_FALSE(load_stack_file(path, &err).has_value());
  EXPECT_EQ(err, path + ": not a regular file (a FIFO)");
  unlink(path.c_str());
  rmdir(dir);
}

std::string parse_error(const std::string& text) {
  std::string error;
  EXPECT_FALSE(parse_stack_file(text, &error).has_value()) << text;
  return error;
}

TEST(StackFileReader, NamesTheFieldAndTheProblem) {
  EXPECT_EQ(
      parse_error(R"({"version":1,"rank":0,"world_size":4,"threads":[{"native":[{"func":3}]}]})"),
      "threads[0].native[0].func: expected a string, got number");
  EXPECT_EQ(parse_error(R"({"version":1,"world_size":4,"threads":[]})"), "rank: missing");
  EXPECT_EQ(parse_error(R"({"version":1,"rank":0,"world_size":4})"), "threads: missing");
  EXPECT_EQ(parse_error(R"({"version":1,"rank":4,"world_size":4,"threads":[]})"),
            "rank: out of range: 4");
  EXPECT_EQ(parse_error(R"({"version":1,"rank":0,"world_size":1e300,"threads":[]})"),
            "world_size: expected an integer, got number");
  EXPECT_EQ(
      parse_error(R"({"version":1,"rank":99999999999999999999999,"world_size":4,"threads":[]})"),
      "rank: expected an integer, got number");
  EXPECT_EQ(parse_error(R"({"version":1,"rank":0,"world_size":18446744073709551615,"threads":[]})"),
            "world_size: out of range: 18446744073709551615");
  EXPECT_EQ(
      parse_error(
          R"({"version":1,"rank":0,"world_size":4,"threads":[{"native":[{"func":"f","line":-3}]}]})"),
      "threads[0].native[0].line: out of range: -3");
  EXPECT_EQ(
      parse_error(
          R"({"version":1,"rank":0,"world_size":4,"threads":[{"native":[{"func":"f","pc":"0xzz"}]}]})"),
      "threads[0].native[0].pc: expected a hex string such as \"0x1f\"");
  EXPECT_EQ(
      parse_error(
          R"({"version":1,"rank":0,"world_size":4,"threads":[{"mixed":[{"kind":"x","func":"f"}]}]})"),
      "threads[0].mixed[0].kind: expected \"native\" or \"python\", got \"x\"");
  EXPECT_EQ(parse_error(
                R"({"version":1,"rank":0,"world_size":4,"threads":[{},{"mixed":[{"func":"f"}]}]})"),
            "threads[1].mixed[0].kind: missing");
  EXPECT_EQ(parse_error(R"({"version":1,"rank":0,"world_size":4,"threads":[],"errors":[1]})"),
            "errors[0]: expected a string");
  EXPECT_EQ(parse_error("[1,2]"), "document: expected a JSON object, got array");
  EXPECT_EQ(
      parse_error(R"({"version":1,"rank":0,"world_size":4,"thr)").rfind("not valid JSON: ", 0), 0u);
}

// The version rule of stack_file.h: another version is refused as such, even
// where its first unreadable field comes before the "version" key.
TEST(StackFileReader, RefusesAnotherVersionWhateverElseTheFileHolds) {
  EXPECT_EQ(parse_error(R"({"version":2,"rank":0,"world_size":4,"threads":[]})"),
            "version: unsupported version 2 (this reader reads 1)");
  EXPECT_EQ(parse_error(R"({"threads":{"new":"layout"},"rank":"r0","version":2})"),
            "version: unsupported version 2 (this reader reads 1)");
  EXPECT_EQ(parse_error(R"({"threads":[],"rank":0,"world_size":4})"), "version: missing");
  EXPECT_EQ(parse_error(R"({"threads":{},"version":1})"), "threads: expected an array, got object");
}

// Readers skip keys they do not know, at any depth, and take defaults for
// absent or null optional keys: files of older and newer writers of version 1 load.
TEST(StackFileReader, SkipsUnknownKeysAndDefaultsAbsentOnes) {
  std::string error;
  const auto s = parse_stack_file(R"({"version":1,"rank":2,"world_size":4,"new":{"a":[[{}]]},
    "pid":null,"python_version":null,"errors":null,"threads":[
      {"name":"t","holds_gil":null,"future":[1,{"x":[]}],
       "native":[{"func":"f","module":"/lib/m.so","file":null,"line":null,"extra":{"y":1}}],
       "python":null,
       "mixed":[{"kind":"python","func":"g","file":"/a.py","line":7}]}]})",
                                  &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->rank, 2);
  EXPECT_EQ(s->world_size, 4);
  EXPECT_EQ(s->pid, 0);
  EXPECT_FALSE(s->python_version);
  ASSERT_EQ(s->threads.size(), 1u);
  const ThreadStack& t = s->threads[0];
  EXPECT_EQ(t.tid, 0);
  EXPECT_EQ(t.state, '?');
  EXPECT_FALSE(t.holds_gil);
  ASSERT_EQ(t.native.size(), 1u);
  EXPECT_EQ(t.native[0].func, "f");
  EXPECT_EQ(t.native[0].module, "/lib/m.so");
  EXPECT_EQ(t.native[0].pc, 0u);
  EXPECT_EQ(t.native[0].line, 0);
  EXPECT_TRUE(t.python.empty());
  ASSERT_EQ(t.mixed.size(), 1u);
  EXPECT_TRUE(t.mixed[0].python);
  EXPECT_EQ(t.mixed[0].line, 7);
}

TEST(StackFile, ListsTheStackFilesOfAFolderByName) {
  char dir[] = "/tmp/xpu_stack_file_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string d = dir;
  for (const char* name : {"00001-00002.stacktrace", "00000-00002.stacktrace", "notes.txt"})
    std::ofstream(d + "/" + name) << "{}";
  ASSERT_EQ(mkdir((d + "/x.stacktrace").c_str(), 0755), 0);
  // Listed, so that the loader refuses it with a warning rather than skip it silently.
  ASSERT_EQ(mkfifo((d + "/00002-00002.stacktrace").c_str(), 0600), 0);
  std::vector<std::string> paths;
  std::string err;
  ASSERT_TRUE(list_stack_files(d, &paths, &err)) << err;
  EXPECT_EQ(paths, (std::vector<std::string>{d + "/00000-00002.stacktrace",
                                             d + "/00001-00002.stacktrace",
                                             d + "/00002-00002.stacktrace"}));
  EXPECT_FALSE(list_stack_files(d + "/nope", &paths, &err));
  EXPECT_EQ(err, "cannot open folder " + d + "/nope: No such file or directory");
  for (const char* name :
       {"00001-00002.stacktrace", "00000-00002.stacktrace", "00002-00002.stacktrace", "notes.txt"})
    unlink((d + "/" + name).c_str());
  rmdir((d + "/x.stacktrace").c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace xpu_timer::stack
