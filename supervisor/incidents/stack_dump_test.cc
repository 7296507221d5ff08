// The stack dump without real processes: report JSON, folder names, and the
// dumper driven by a fake collector (files, parallel workers, one dump at a
// time, failures of single ranks) with the real flame-graph library.
#include "supervisor/incidents/stack_dump.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>

#include "stack/stack_file.h"
#include "supervisor/http/http_routes.h"

namespace xpu_timer::supervisor {
namespace {

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/stack_dump_test.XXXXXX";
    const char* p = mkdtemp(tmpl);
    if (p == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fake rank: rank 3 hangs in host code, the others wait in the collective.
stack::CollectResult fake_stack(pid_t pid, const stack::CollectOptions& o) {
  stack::CollectResult r;
  r.attached = true;
  stack::ProcessStack& s = r.stack;
  s.pid = pid;
  s.rank = o.rank;
  s.world_size = o.world_size;
  s.host = "node1";
  s.process_state = "S (sleeping)";
  s.collected_at = 1763800000.0;
  s.stopped_ms = 10.0 + o.rank;
  s.python_version = "3.12.3";
  stack::ThreadStack t;
  t.tid = pid;
  t.name = "python3";
  t.state = 'S';
  t.holds_gil = true;
  const bool stuck = o.rank == 3;
  stack::NativeFrame leaf;
  leaf.pc = 0x7f0000001000;
  leaf.func = stuck ? "clock_nanosleep" : "sim_sync";
  leaf.module = stuck ? "/lib/libc.so.6" : "/x/libnccl.so.2";
  leaf.offset = 0x1000;
  stack::NativeFrame main_frame;
  main_frame.pc = 0x400000;
  main_frame.func = "main";
  main_frame.module = "/usr/bin/python3";
  main_frame.offset = 0x400;
  t.native = {leaf, main_frame};
  t.python = {{stuck ? "stuck_in_host_code" : "train_step", "/x/train.py", stuck ? 75 : 103, true},
              {"main", "/x/train.py", 120, true}};
  s.threads.push_back(t);
  return r;
}

std::shared_ptr<const StackDumpReport> wait_done(
    std::future<std::shared_ptr<const StackDumpReport>>* f) {
  if (f->wait_for(20s) != std::future_status::ready) return nullptr;
  return f->get();
}

TEST(StackDumpFolderName, IsUtcTimeWithMilliseconds) {
  EXPECT_EQ(stack_dump_folder_name(1763800000.123), "stacks-20251122-082640.123");
  EXPECT_EQ(stack_dump_folder_name(0.0), "stacks-19700101-000000.000");
  // 0.9996 s rounds to the next second, never to ".1000".
  EXPECT_EQ(stack_dump_folder_name(1763800000.9996), "stacks-20251122-082641.000");
  EXPECT_EQ(stack_dump_folder_name(-5.0), "stacks-19700101-000000.000");
}

TEST(StackDumpJson, InProgressNamesTheFolderAndTheRanksOnly) {
  StackDumpReport r;
  r.dir = "/d/stacks-x";
  r.reason = "hang";
  r.started_at = 100.5;
  r.ranks = {{0, 11, false, 0, 0, "", "", {}}, {2, 13, false, 0, 0, "", "", {}}};
  const nlohmann::json j = stack_dump_json(r);
  EXPECT_EQ(j, nlohmann::json::parse(R"json({
    "dir": "/d/stacks-x", "reason": "hang", "in_progress": true, "started_at": 100.5,
    "collected_at": null, "collect_s": null, "render_s": null, "max_stopped_ms": null,
    "ranks": [{"rank": 0, "pid": 11}, {"rank": 2, "pid": 13}],
    "outputs": null, "render_error": null, "render_warnings": null})json"))
      << j.dump(2);
}

TEST(StackDumpJson, DoneHasPerRankStopTimesFilesAndErrors) {
  StackDumpReport r;
  r.dir = "/d/s";
  r.reason = "request";
  r.in_progress = false;
  r.started_at = 100.0;
  r.collected_at = 100.75;
  r.collect_s = 0.75;
  r.render_s = 0.25;
  r.ranks = {{0, 11, true, 12.5, 3, "S (sleeping)", "/d/s/00000-00002.stacktrace", {}},
             {1, 12, false, 0, 0, "", "", {"process 12 does not exist"}}};
  r.outputs = {"/d/s/cpp_stack"};
  const nlohmann::json j = stack_dump_json(r);
  EXPECT_EQ(j, nlohmann::json::parse(R"json({
    "dir": "/d/s", "reason": "request", "in_progress": false, "started_at": 100.0,
    "collected_at": 100.75, "collect_s": 0.75, "render_s": 0.25, "max_stopped_ms": 12.5,
    "ranks": [
      {"rank": 0, "pid": 11, "attached": true, "stopped_ms": 12.5, "threads": 3,
       "process_state": "S (sleeping)", "file": "/d/s/00000-00002.stacktrace", "errors": []},
      {"rank": 1, "pid": 12, "attached": false, "stopped_ms": 0.0, "threads": 0,
       "process_state": "", "file": null, "errors": ["process 12 does not exist"]}],
    "outputs": ["/d/s/cpp_stack"], "render_error": null, "render_warnings": []})json"))
      << j.dump(2);
  r.render_error = "no stack file was written";
  EXPECT_EQ(stack_dump_json(r)["render_error"], "no stack file was written");
}

TEST(StackDumpSummary, OneLineWithCountTimeMaxStopAndFolder) {
  StackDumpReport r;
  r.dir = "/d/stacks-1";
  r.collect_s = 0.84;
  r.ranks = {{0, 1, true, 12.2, 1, "", "", {}},
             {1, 2, true, 3.0, 1, "", "", {}},
             {2, 3, true, 7.0, 1, "", "", {}},
             {3, 4, true, 1.0, 1, "", "", {}}};
  EXPECT_EQ(stack_dump_summary(r), "stacks of 4 ranks in 0.8 s (max stop 12 ms): /d/stacks-1");
  r.ranks.resize(1);
  EXPECT_EQ(stack_dump_summary(r), "stacks of 1 rank in 0.8 s (max stop 12 ms): /d/stacks-1");
}

TEST(StackDumper, WritesOneFilePerRankAndRankMergedFlameGraphs) {
  TempDir tmp;
  StackDumpSettings settings;
  settings.dump_dir = tmp.path() + "/dump";  // created on demand
  StackDumper dumper(settings, fake_stack);
  EXPECT_EQ(dumper.latest(), nullptr);
  std::promise<std::shared_ptr<const StackDumpReport>> done;
  auto future = done.get_future();
  // Rank 2 of the world of 4 never registered: no target, no file.
  const auto started = dumper.start({{3, 4, 1003}, {0, 4, 1000}, {1, 4, 1001}}, "hang",
                                    [&](auto r) { done.set_value(r); });
  ASSERT_EQ(started.status, StackDumper::StartStatus::kStarted) << started.error;
  EXPECT_EQ(started.dir.rfind(settings.dump_dir + "/stacks-", 0), 0u) << started.dir;
  const auto report = wait_done(&future);
  ASSERT_NE(report, nullptr);
  EXPECT_FALSE(dumper.running());
  EXPECT_EQ(dumper.latest(), report);
  EXPECT_FALSE(report->in_progress);
  EXPECT_EQ(report->dir, started.dir);
  EXPECT_EQ(report->reason, "hang");
  ASSERT_EQ(report->ranks.size(), 3u);
  const int ranks[] = {0, 1, 3};
  for (size_t i = 0; i < 3; ++i) {
    const RankStackResult& r = report->ranks[i];
    EXPECT_EQ(r.rank, ranks[i]);
    EXPECT_EQ(r.pid, 1000 + ranks[i]);
    EXPECT_TRUE(r.attached);
    EXPECT_DOUBLE_EQ(r.stopped_ms, 10.0 + ranks[i]);
    EXPECT_EQ(r.threads, 1u);
    EXPECT_TRUE(r.errors.empty());
    EXPECT_EQ(r.file, started.dir + "/" + stack::stack_file_name(ranks[i], 4));
    std::string error;
    auto loaded = stack::load_stack_file(r.file, &error);
    ASSERT_TRUE(loaded) << error;
    EXPECT_EQ(loaded->rank, ranks[i]);
    EXPECT_EQ(loaded->world_size, 4);
  }
  EXPECT_FALSE(std::filesystem::exists(started.dir + "/00002-00004.stacktrace"));
  EXPECT_TRUE(report->render_error.empty()) << report->render_error;
  for (const char* name : {"cpp_stack", "py_stack", "mixed_stack", "cpp_stack.svg", "py_stack.svg",
                           "mixed_stack.svg"}) {
    EXPECT_TRUE(std::filesystem::exists(started.dir + "/" + name)) << name;
  }
  // The missing rank 2 is a leak rank everywhere; rank 3 alone is in host code.
  const std::string py = read_all(started.dir + "/py_stack");
  EXPECT_NE(py.find("stuck_in_host_code@/x/train.py:75@3|0-2"), std::string::npos) << py;
  EXPECT_NE(py.find("train_step@/x/train.py:103@0-1|2-3"), std::string::npos) << py;
  const std::string cpp = read_all(started.dir + "/cpp_stack");
  EXPECT_NE(cpp.find("sim_sync@libnccl.so.2@0-1|2-3"), std::string::npos) << cpp;
  EXPECT_GE(report->collect_s, 0.0);
  EXPECT_GE(report->render_s, 0.0);
  EXPECT_EQ(stack_dump_json(*report)["max_stopped_ms"], 13.0);
}

TEST(StackDumper, HangsFolderHoldsItsVerdictAndTheGraphsNameIt) {
  TempDir tmp;
  StackDumpSettings settings;
  settings.dump_dir = tmp.path();
  StackDumper dumper(settings, fake_stack);
  std::promise<std::shared_ptr<const StackDumpReport>> done;
  auto future = done.get_future();
  const std::string hang_json =
      R"js({"hung":true,"summary":"ranks 0-1 stuck in AllReduce #6 on comm 00000000000000ab for 3.0 s; rank 3 missing (no operation in flight)",
            "ranks":[{"rank":0,"state":"stuck"},{"rank":1,"state":"stuck"},{"rank":3,"state":"missing"}]})js";
  const auto started = dumper.start(
      {{0, 4, 1000}, {1, 4, 1001}, {3, 4, 1003}}, "hang", [&](auto r) { done.set_value(r); },
      hang_json + "\n");
  ASSERT_EQ(started.status, StackDumper::StartStatus::kStarted) << started.error;
  const auto report = wait_done(&future);
  ASSERT_NE(report, nullptr);
  EXPECT_EQ(read_all(started.dir + "/hang.json"), hang_json + "\n");
  const std::string svg = read_all(started.dir + "/py_stack.svg");
  EXPECT_NE(svg.find("<title>hang: ranks 0-1 stuck in AllReduce #6 on comm 00000000000000ab for "
                     "3.0 s; rank 3 missing (no operation in flight)</title>"),
            std::string::npos)
      << svg.substr(0, 3000);
  // Rank 3, alone in host code, is the missing rank: the title names it, the
  // culprit panel shows its frame first, and the graph's frame is outlined.
  EXPECT_NE(svg.find(">rank 3 missing, in "), std::string::npos) << svg.substr(0, 3000);
  const size_t shown = svg.find("<title>stuck_in_host_code@/x/train.py:75@3|0-2\n");
  ASSERT_NE(shown, std::string::npos);
  EXPECT_EQ(svg.substr(svg.rfind("<g class=", shown), 13), "<g class=\"cf\"");
  const size_t leak = svg.find("<title>stuck_in_host_code@/x/train.py:75@3|0-2\n", shown + 1);
  ASSERT_NE(leak, std::string::npos);
  EXPECT_EQ(svg.substr(svg.rfind("<g class=", leak), 21), "<g class=\"f culprit\" ");
}

TEST(StackDumper, CollectsRanksInParallelOnBoundedWorkers) {
  TempDir tmp;
  std::mutex m;
  std::condition_variable cv;
  int inside = 0, most_inside = 0;
  auto collect = [&](pid_t pid, const stack::CollectOptions& o) {
    std::unique_lock<std::mutex> lock(m);
    ++inside;
    most_inside = std::max(most_inside, inside);
    cv.notify_all();
    // Each call waits (bounded) until 3 are inside at once: only parallel
    // workers get there.
    cv.wait_for(lock, 5s, [&] { return most_inside >= 3; });
    --inside;
    lock.unlock();
    return fake_stack(pid, o);
  };
  StackDumpSettings settings;
  settings.dump_dir = tmp.path();
  settings.max_workers = 3;
  settings.render = false;
  StackDumper dumper(settings, collect);
  std::promise<std::shared_ptr<const StackDumpReport>> done;
  auto future = done.get_future();
  std::vector<StackTarget> targets;
  for (int r = 0; r < 7; ++r) targets.push_back({r, 7, 2000 + r});
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(dumper.start(targets, "request", [&](auto r) { done.set_value(r); }).status,
            StackDumper::StartStatus::kStarted);
  const auto report = wait_done(&future);
  ASSERT_NE(report, nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s) << "ranks were not collected in parallel";
  EXPECT_EQ(most_inside, 3);  // never more than max_workers
  EXPECT_EQ(report->ranks.size(), 7u);
  EXPECT_TRUE(report->outputs.empty());  // render off
}

TEST(StackDumper, OneDumpAtATimeThenTheNextGetsANewFolder) {
  TempDir tmp;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto collect = [&](pid_t pid, const stack::CollectOptions& o) {
    released.wait_for(10s);
    return fake_stack(pid, o);
  };
  StackDumpSettings settings;
  settings.dump_dir = tmp.path();
  settings.render = false;
  StackDumper dumper(settings, collect);
  std::promise<std::shared_ptr<const StackDumpReport>> done1;
  auto f1 = done1.get_future();
  const auto first = dumper.start({{0, 1, 10}}, "hang", [&](auto r) { done1.set_value(r); });
  ASSERT_EQ(first.status, StackDumper::StartStatus::kStarted);
  EXPECT_TRUE(dumper.running());
  ASSERT_NE(dumper.latest(), nullptr);
  EXPECT_TRUE(dumper.latest()->in_progress);
  EXPECT_EQ(dumper.latest()->dir, first.dir);
  const auto busy = dumper.start({{0, 1, 10}}, "request", nullptr);
  EXPECT_EQ(busy.status, StackDumper::StartStatus::kBusy);
  EXPECT_EQ(busy.dir, first.dir);
  release.set_value();
  ASSERT_NE(wait_done(&f1), nullptr);
  std::promise<std::shared_ptr<const StackDumpReport>> done2;
  auto f2 = done2.get_future();
  const auto second = dumper.start({{0, 1, 10}}, "request", [&](auto r) { done2.set_value(r); });
  ASSERT_EQ(second.status, StackDumper::StartStatus::kStarted) << second.error;
  EXPECT_NE(second.dir, first.dir);
  const auto report2 = wait_done(&f2);
  ASSERT_NE(report2, nullptr);
  EXPECT_EQ(report2->reason, "request");
}

TEST(StackDumper, NoTargetsAndUnwritableDumpDirAreRefusedWithOneLine) {
  TempDir tmp;
  StackDumpSettings settings;
  settings.dump_dir = tmp.path();
  StackDumper dumper(settings, fake_stack);
  const auto none = dumper.start({}, "request", nullptr);
  EXPECT_EQ(none.status, StackDumper::StartStatus::kNoTargets);
  EXPECT_EQ(none.error, "no registered rank is alive on this node");
  EXPECT_FALSE(dumper.running());

  std::ofstream(tmp.path() + "/file") << "x";
  settings.dump_dir = tmp.path() + "/file/sub";
  StackDumper bad(settings, fake_stack);
  const auto failed = bad.start({{0, 1, 10}}, "request", nullptr);
  EXPECT_EQ(failed.status, StackDumper::StartStatus::kFailed);
  EXPECT_NE(failed.error.find("cannot create " + tmp.path() + "/file/sub"), std::string::npos)
      << failed.error;
}

TEST(StackDumper, ARankThatVanishedOrBrokeTheCollectorOnlyGetsErrors) {
  TempDir tmp;
  auto collect = [](pid_t pid, const stack::CollectOptions& o) {
    if (o.rank == 1) {  // exited before we came: no threads, not attached
      stack::CollectResult r;
      r.stack.pid = pid;
      r.stack.errors.push_back("process " + std::to_string(pid) + " does not exist");
      return r;
    }
    if (o.rank == 2) throw std::runtime_error("bad_alloc in the collector");
    if (o.rank == 3) {  // collector timed out: state known, no frames
      stack::CollectResult r;
      r.stack.pid = pid;
      r.stack.process_state = "D (disk sleep)";
      stack::ThreadStack t;
      t.tid = pid;
      t.state = 'D';
      r.stack.threads.push_back(t);
      r.stack.errors.push_back("stack collector timed out after 15000 ms and was killed");
      return r;
    }
    return fake_stack(pid, o);
  };
  StackDumpSettings settings;
  settings.dump_dir = tmp.path();
  StackDumper dumper(settings, collect);
  std::promise<std::shared_ptr<const StackDumpReport>> done;
  auto future = done.get_future();
  ASSERT_EQ(dumper
                .start({{0, 4, 30}, {1, 4, 31}, {2, 4, 32}, {3, 4, 33}}, "hang",
                       [&](auto r) { done.set_value(r); })
                .status,
            StackDumper::StartStatus::kStarted);
  const auto report = wait_done(&future);
  ASSERT_NE(report, nullptr);
  ASSERT_EQ(report->ranks.size(), 4u);
  EXPECT_FALSE(report->ranks[0].file.empty());
  EXPECT_TRUE(report->ranks[1].file.empty());
  EXPECT_EQ(report->ranks[1].errors, std::vector<std::string>{"process 31 does not exist"});
  EXPECT_TRUE(report->ranks[2].file.empty());
  EXPECT_EQ(report->ranks[2].errors,
            std::vector<std::string>{"stack collection failed: bad_alloc in the collector"});
  // Partial evidence is still a file: its process state shows in the graphs.
  EXPECT_EQ(report->ranks[3].file, report->dir + "/00003-00004.stacktrace");
  EXPECT_EQ(report->ranks[3].process_state, "D (disk sleep)");
  EXPECT_TRUE(report->render_error.empty()) << report->render_error;
  const std::string cpp = read_all(report->dir + "/cpp_stack");
  EXPECT_NE(cpp.find("state:D (disk sleep)@process@3|0-2"), std::string::npos) << cpp;
}

TEST(StackDumpRoute, PostDumpStacksAnswersWhatTheHandlerSaysAsJson) {
  HttpHandlers h{[] { return std::string("{}"); }, [] { return std::string("[]"); },
                 [] { return std::string(); }};
  EXPECT_EQ(route_request(h, "POST", "/dump/stacks").status, 501);  // no handler: not built in
  int status = 202;
  h.dump_stacks = [&](std::string* body) {
    *body = "{\"dir\":\"/d/stacks-1\"}";
    return status;
  };
  HttpAnswer a = route_request(h, "POST", "/dump/stacks");
  EXPECT_EQ(a.status, 202);
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.body, "{\"dir\":\"/d/stacks-1\"}\n");
  status = 409;
  EXPECT_EQ(route_request(h, "POST", "/dump/stacks?x=1").status, 409);
  EXPECT_EQ(route_request(h, "GET", "/dump/stacks").status, 405);
  h.dump_stacks = [](std::string*) -> int { throw std::runtime_error("boom"); };
  a = route_request(h, "POST", "/dump/stacks");
  EXPECT_EQ(a.status, 500);
  EXPECT_EQ(a.body, "internal error: boom\n");
  // The timeline routes are someone else's: still not implemented here.
  EXPECT_EQ(route_request(h, "POST", "/HostingService/DumpKernelTrace").status, 501);
}

}  // namespace
}  // namespace xpu_timer::supervisor
