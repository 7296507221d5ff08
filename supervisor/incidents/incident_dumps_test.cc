#include "supervisor/incidents/incident_dumps.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>

#include "common/recorder_ring.h"

namespace xpu_timer::supervisor {
namespace {

namespace fs = std::filesystem;

// A real ring in /dev/shm with `n` completed AllReduces, mapped as the
// supervisor maps a registered rank's.
class TestRing {
 public:
  explicit TestRing(int rank, int world, int n) {
    char tmpl[] = "/dev/shm/xpu_incident_ring_XXXXXX";
    dir_ = mkdtemp(tmpl);
    EXPECT_TRUE(writer_.create(dir_.c_str(), RankIdentity{rank, rank, world, world, 0}, getpid(),
                               64));
    for (int i = 1; i <= n; ++i) {
      recorder::RecordData d;
      d.name = 32;  // AllReduce
      d.kind = 2;
      d.dtype = 3;
      d.state = static_cast<uint8_t>(recorder::OpState::kCompleted);
      d.flags = recorder::kRecTimed;
      d.device = 0;
      d.nranks = static_cast<uint32_t>(world);
      d.stream = 0x7f0000001000;
      d.comm_hash = 0x1234;
      d.seq = static_cast<uint64_t>(i);
      d.count = 1024;
      d.bytes = 4096;
      d.launch_ns = 1000000ull * i;
      d.ready_ns = d.launch_ns + 500;
      d.gpu_start_ns = d.launch_ns + 1000;
      d.gpu_end_ns = d.gpu_start_ns + 5000;
      writer_.append(d);
    }
    std::string error;
    reader_ = recorder::RingReader::attach(writer_.path(), getpid(), rank, &error);
    EXPECT_NE(reader_, nullptr) << error;
  }
  ~TestRing() {
    writer_.unlink_file();
    fs::remove_all(dir_);
  }
  std::shared_ptr<const recorder::RingReader> reader() const { return reader_; }

 private:
  std::string dir_;
  recorder::RingWriter writer_;
  std::shared_ptr<const recorder::RingReader> reader_;
};

// Releases a held conversion however a test ends, or the dumper's destructor
// would wait for it for ever.
struct Releaser {
  std::promise<void>* p;
  bool done = false;
  void now() {
    if (!done) p->set_value();
    done = true;
  }
  ~Releaser() { now(); }
};

std::string temp_dir() {
  char tmpl[] = "/tmp/xpu_incident_dumps_XXXXXX";
  return mkdtemp(tmpl);
}

// The conversion to timeline.json runs on the dumper's thread: dump() returns
// with the rings written while a conversion is held, dumps queue behind it up
// to kMaxQueued, one more keeps its files but is not converted, and every
// queued one is converted once released.
TEST(TimelineDumper, ConvertsOffTheCallersThreadOneAtATimeWithABoundedQueue) {
  TestRing ring0(0, 2, 10), ring1(1, 2, 10);
  const std::vector<TimelineTarget> targets{{0, 2, ring0.reader(), {}}, {1, 2, ring1.reader(), {}}};
  const std::string dir = temp_dir();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<std::string> held;
  bool first = true;
  TimelineDumper dumper;
  Releaser releaser{&release};
  dumper.set_convert_hook([&](const std::string& d) {
    if (!first) return;
    first = false;
    held.set_value(d);
    released.wait();
  });
  const TimelineDumpResult a = dumper.dump(targets, dir, "hang", "", 1700000000.0);
  ASSERT_TRUE(a.ok);
  EXPECT_TRUE(a.converting);
  EXPECT_EQ(a.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(a.records, 20u);
  EXPECT_EQ(held.get_future().get(), a.dir);  // the dumper's thread holds it now
  EXPECT_TRUE(fs::exists(a.dir + "/00000-00002.timeline"));
  EXPECT_FALSE(fs::exists(a.trace));  // returned before its conversion
  std::string busy_dir;
  EXPECT_TRUE(dumper.busy(&busy_dir));
  EXPECT_EQ(busy_dir, a.dir);
  const TimelineDumpResult b = dumper.dump(targets, dir, "request", "", 1700000001.0);
  const TimelineDumpResult c = dumper.dump(targets, dir, "request", "", 1700000002.0);
  const TimelineDumpResult d = dumper.dump(targets, dir, "request", "", 1700000003.0);
  EXPECT_TRUE(b.converting);
  EXPECT_TRUE(c.converting);
  EXPECT_TRUE(d.ok);  // its files are there
  EXPECT_FALSE(d.converting);
  ASSERT_EQ(d.errors.size(), 1u);
  EXPECT_NE(d.errors[0].find("not converted: 2 conversions are waiting"), std::string::npos)
      << d.errors[0];
  EXPECT_EQ(dumper.converted(), 0u);
  releaser.now();
  ASSERT_TRUE(dumper.wait_idle(60000));
  EXPECT_EQ(dumper.converted(), 3u);
  for (const TimelineDumpResult* r : {&a, &b, &c}) {
    std::ifstream f(r->trace);
    const nlohmann::json doc = nlohmann::json::parse(f, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << r->trace;
    EXPECT_FALSE(doc.at("traceEvents").empty());
  }
  EXPECT_FALSE(fs::exists(d.dir + "/timeline.json"));
  EXPECT_FALSE(dumper.busy());
  fs::remove_all(dir);
}

// The names the ranks' pages give their communicators go beside the rings
// (comms.json) and into the trace's collective slices (comm_name); a dump
// without names writes no comms.json.
TEST(TimelineDumper, CommunicatorNamesGoBesideTheRingsAndIntoTheTrace) {
  TestRing ring0(0, 2, 4), ring1(1, 2, 4);
  const std::vector<TimelineTarget> named{{0, 2, ring0.reader(), {{0x1234, "tp"}}},
                                          {1, 2, ring1.reader(), {{0x1234, "tp"}}}};
  const std::string dir = temp_dir();
  TimelineDumper dumper;
  const TimelineDumpResult r = dumper.dump(named, dir, "crash", "", 1700000000.0);
  ASSERT_TRUE(r.ok);
  ASSERT_TRUE(dumper.wait_idle(60000));
  std::ifstream comms(r.dir + "/comms.json");
  const nlohmann::json c = nlohmann::json::parse(comms, nullptr, false);
  EXPECT_EQ(c, nlohmann::json::parse(R"({"comms": [{"comm": "0000000000001234", "name": "tp"}]})"));
  std::ifstream f(r.trace);
  const nlohmann::json doc = nlohmann::json::parse(f, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.trace;
  size_t collectives = 0;
  for (const nlohmann::json& e : doc.at("traceEvents")) {
    if (e.value("ph", "") != "X" || !e.contains("args") || !e["args"].contains("comm")) continue;
    ++collectives;
    EXPECT_EQ(e["args"].value("comm_name", ""), "tp") << e.dump();
  }
  EXPECT_GT(collectives, 0u);
  const std::vector<TimelineTarget> unnamed{{0, 2, ring0.reader(), {}}};
  const TimelineDumpResult u = dumper.dump(unnamed, dir, "request", "", 1700000001.0);
  ASSERT_TRUE(u.ok);
  EXPECT_FALSE(fs::exists(u.dir + "/comms.json"));
  ASSERT_TRUE(dumper.wait_idle(60000));
  fs::remove_all(dir);
}

// The destructor finishes what is queued, then joins.
TEST(TimelineDumper, TheDestructorFinishesTheQueuedConversions) {
  TestRing ring0(0, 1, 5);
  const std::string dir = temp_dir();
  std::string trace;
  {
    TimelineDumper dumper;
    const TimelineDumpResult r = dumper.dump({{0, 1, ring0.reader(), {}}}, dir, "crash", "", 1.0);
    ASSERT_TRUE(r.converting);
    trace = r.trace;
  }
  EXPECT_TRUE(fs::exists(trace));
  fs::remove_all(dir);
}

// POST /dump/timeline: 409 naming the folder while a conversion runs, 429
// within the minimum interval, 200 otherwise.
TEST(IncidentDumps, TimelineRequestsAreRefusedWhileBusyAndTooOften) {
  TestRing ring0(0, 1, 5);
  const std::string dir = temp_dir();
  RankRecord rec;
  rec.reg.rank = 0;
  rec.reg.world_size = 1;
  rec.ring = ring0.reader();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  IncidentDumps dumps(dir, [rec] { return std::vector<RankRecord>{rec}; });
  Releaser releaser{&release};
  std::promise<void> held;
  bool first = true;
  dumps.timeline_dumper().set_convert_hook([&](const std::string&) {
    if (!first) return;
    first = false;
    held.set_value();
    released.wait();
  });
  std::string body;
  ASSERT_EQ(dumps.timeline_request("", &body), 200) << body;
  const std::string first_dir = nlohmann::json::parse(body).at("dir");
  EXPECT_EQ(nlohmann::json::parse(body).at("converting"), true);
  held.get_future().wait();
  EXPECT_EQ(dumps.timeline_request("", &body), 409) << body;
  EXPECT_EQ(nlohmann::json::parse(body).at("dir"), first_dir);
  releaser.now();
  ASSERT_TRUE(dumps.timeline_dumper().wait_idle(60000));
  // Idle again, but within the interval of the accepted request (unless this
  // machine took longer than the interval to get here: then it is accepted).
  const int status = dumps.timeline_request("", &body);
  if (status == 429) {
    EXPECT_GT(nlohmann::json::parse(body).at("retry_after_s").get<double>(), 0) << body;
  } else {
    EXPECT_EQ(status, 200) << body;
  }
  fs::remove_all(dir);
}

// A supervisor killed mid-dump leaves an empty stacks-*/timeline-* folder; the
// next one removes those, and nothing else.
TEST(IncidentDumps, EmptyDumpFoldersOfAnInterruptedRunAreRemovedAtStart) {
  char tmpl[] = "/tmp/xpu_incident_dumps_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  for (const char* name : {"stacks-20261124-101010", "timeline-20261124-101010-hang",
                           "stacks-20261124-111111", "other-empty"}) {
    ASSERT_EQ(::mkdir((dir + "/" + name).c_str(), 0755), 0) << name;
  }
  std::ofstream(dir + "/stacks-20261124-111111/00000-00001.stacktrace") << "{}";
  {
    IncidentDumps dumps(dir, [] { return std::vector<RankRecord>{}; });
    EXPECT_TRUE(dumps.enabled());
  }
  EXPECT_FALSE(fs::exists(dir + "/stacks-20261124-101010"));
  EXPECT_FALSE(fs::exists(dir + "/timeline-20261124-101010-hang"));
  EXPECT_TRUE(fs::exists(dir + "/stacks-20261124-111111/00000-00001.stacktrace"));
  EXPECT_TRUE(fs::exists(dir + "/other-empty"));
  fs::remove_all(dir);
}

// Without a usable dump folder every dump is refused with one line.
TEST(IncidentDumps, WithoutADumpFolderEveryDumpIsRefused) {
  IncidentDumps dumps("", [] { return std::vector<RankRecord>{}; });
  EXPECT_FALSE(dumps.enabled());
  EXPECT_EQ(dumps.timelines("request", "").errors,
            std::vector<std::string>{"no usable dump directory"});
  std::string body;
  EXPECT_EQ(dumps.stacks_request([](std::shared_ptr<const StackDumpReport>) {}, &body), 503);
  EXPECT_NE(body.find("no usable dump directory"), std::string::npos) << body;
  EXPECT_EQ(dumps.timeline_request("", &body), 503);
}

}  // namespace
}  // namespace xpu_timer::supervisor
