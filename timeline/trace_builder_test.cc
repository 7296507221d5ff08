// The trace of a 4-rank job where rank 2 stops before AllReduce #6 (see
// test_dumps.h): checked event by event, with exact names, times and args.
#include "timeline/trace_builder.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "timeline/op_describe.h"
#include "timeline/test_dumps.h"
#include "timeline/trace_queries.h"

namespace xpu_timer::timeline {
namespace {

using nlohmann::json;
using testing::JobSpec;
using testing::TempDir;

using testing::enclosing;
using testing::events_with;
using testing::process_names;
using testing::slice_named;
using testing::thread_names;
using testing::trace_of;

class HungJobTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_job(dir_.path(), spec_, /*with_hang_json=*/true);
    trace_ = trace_of({dir_.path()}, &warnings_);
    slices_ = events_with(trace_, "X");
  }
  TempDir dir_;
  JobSpec spec_;
  std::vector<std::string> warnings_;
  json trace_;
  std::vector<json> slices_;
};

// Each rank's process says its part in the hang, and the missing rank, the
// one the others wait for, sorts first (Perfetto: lowest sort_index first).
// The sampled-out GEMMs, published without their device, add no track: the
// compute stream's track is theirs, and no empty host or "GPU?" track is named.
TEST_F(HungJobTrace, EveryRankIsAProcessNamedByItsRoleAndEveryStreamATrack) {
  EXPECT_TRUE(warnings_.empty());
  EXPECT_EQ(process_names(trace_),
            (std::map<int, std::string>{{1, "rank 0 - stuck in AllReduce #6"},
                                        {2, "rank 1 - stuck in AllReduce #6"},
                                        {3, "rank 2 - MISSING"},
                                        {4, "rank 3 - stuck in AllReduce #6"}}));
  std::map<std::pair<int, int>, std::string> expected;
  for (int r = 0; r < 4; ++r) {
    const std::string gpu = "GPU" + std::to_string(r);
    expected[{r + 1, 2}] = gpu + " stream 0x7f00a0001000";
    expected[{r + 1, 3}] = gpu + " stream 0x7f00a0002000";
  }
  EXPECT_EQ(thread_names(trace_), expected);
  std::map<int, int> sort_index;  // pid -> index
  for (const json& e : events_with(trace_, "M")) {
    if (e["name"] == "process_sort_index") sort_index[e["pid"]] = e["args"]["sort_index"];
  }
  EXPECT_EQ(sort_index, (std::map<int, int>{{3, 0}, {1, 1}, {2, 2}, {4, 3}}));
  // Every slice sits on a named track.
  for (const json& s : slices_) EXPECT_EQ(expected.count({s["pid"], s["tid"]}), 1u) << s.dump();
  // Nothing that Perfetto's importer ignores.
  for (const json& e : trace_["traceEvents"]) {
    EXPECT_FALSE(e.contains("cname")) << e.dump();
    EXPECT_NE(e["name"], "process_labels");
  }
}

// A crash dump: the supervisor's document says no hang, rank 2 crashed.
// The crashed rank is named so, sorted first; the others by what they were
// doing, in no hang's words (no STUCK).
TEST(CrashDumpTrace, TheCrashedRankIsNamedAndTheOthersByWhatTheyWereDoing) {
  TempDir dir;
  JobSpec spec;
  testing::write_job(dir.path(), spec, /*with_hang_json=*/false);
  dir.write("hang.json", R"json({"hung": false, "summary": "rank 2 crashed: died of SIGSEGV",
      "ranks": [{"rank": 0, "state": "ok"}, {"rank": 1, "state": "ok"},
                {"rank": 2, "state": "crashed",
                 "reason": "died of SIGSEGV at address 0x0 in memmove, from f (t.py:4)"},
                {"rank": 3, "state": "ok"}]})json");
  std::vector<std::string> warnings;
  const json trace = trace_of({dir.path()}, &warnings);
  EXPECT_EQ(process_names(trace),
            (std::map<int, std::string>{
                {1, "rank 0 - AllReduce #6 in flight at dump"},
                {2, "rank 1 - AllReduce #6 in flight at dump"},
                {3, "rank 2 - CRASHED: died of SIGSEGV at address 0x0 in memmove, from f (t.py:4)"},
                {4, "rank 3 - AllReduce #6 in flight at dump"}}));
  for (const json& s : events_with(trace, "X")) {
    EXPECT_EQ(s["name"].get<std::string>().rfind("STUCK", 0), std::string::npos) << s.dump();
  }
  std::map<int, int> sort_index;  // pid -> index
  for (const json& e : events_with(trace, "M")) {
    if (e["name"] == "process_sort_index") sort_index[e["pid"]] = e["args"]["sort_index"];
  }
  EXPECT_EQ(sort_index.at(3), 0);
}

TEST_F(HungJobTrace, SlicesHaveExactNamesTimesAndArgs) {
  // Per rank: 6 timed GEMMs + 5 AllReduces (+1 STUCK); the 6 sampled-out
  // GEMMs are a counter, not slices. Names group the calls of one kind.
  std::map<int, int> per_pid;
  std::map<int, std::set<std::string>> names;
  for (const json& s : slices_) {
    ++per_pid[s["pid"]];
    names[s["pid"]].insert(s["name"].get<std::string>());
    EXPECT_FALSE(s["dur"] == 0 && s["args"]["state"] == "untimed") << s.dump();
  }
  EXPECT_EQ(per_pid, (std::map<int, int>{{1, 12}, {2, 12}, {3, 11}, {4, 12}}));
  const std::set<std::string> stuck_rank = {"GemmEx bf16 4096x4096x1024", "AllReduce",
                                            "STUCK AllReduce"};
  EXPECT_EQ(names[1], stuck_rank);
  EXPECT_EQ(names[3], (std::set<std::string>{"GemmEx bf16 4096x4096x1024", "AllReduce"}));

  // t0 is rank 0's first launch, base + 1 ms; rank 1 runs 1 us later.
  const json* gemm = enclosing(slices_, 2, 2, 1011.0 + 50);  // rank 1, step 2
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ((*gemm)["name"], "GemmEx bf16 4096x4096x1024");
  EXPECT_EQ((*gemm)["cat"], "gemm");
  EXPECT_DOUBLE_EQ((*gemm)["ts"].get<double>(), 1011.0);
  EXPECT_DOUBLE_EQ((*gemm)["dur"].get<double>(), 100.0);
  const json& ga = (*gemm)["args"];
  EXPECT_EQ(ga["op"], "GemmEx");
  EXPECT_EQ(ga["dtype"], "bf16");
  EXPECT_EQ(ga["state"], "completed");
  EXPECT_EQ(ga["m"], 4096);
  EXPECT_EQ(ga["n"], 4096);
  EXPECT_EQ(ga["k"], 1024);
  EXPECT_EQ(ga["batch"], 1);
  EXPECT_EQ(ga["flops"], 34359738368ull);
  EXPECT_DOUBLE_EQ(ga["tflops"].get<double>(), 343.59738368);
  EXPECT_DOUBLE_EQ(ga["launch_us"].get<double>(), 1001.0);

  const json* ar = enclosing(slices_, 1, 3, 2120.0 + 100);  // rank 0, AllReduce #3
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ((*ar)["name"], "AllReduce");
  EXPECT_EQ((*ar)["tid"], 3);
  EXPECT_EQ((*ar)["cat"], "nccl");
  EXPECT_DOUBLE_EQ((*ar)["ts"].get<double>(), 2120.0);
  EXPECT_DOUBLE_EQ((*ar)["dur"].get<double>(), 200.0);
  const json& aa = (*ar)["args"];
  EXPECT_EQ(aa["comm"], "06543c4e36ee6c61");
  EXPECT_EQ(aa["seq"], 3);
  EXPECT_EQ(aa["nranks"], 4);
  EXPECT_EQ(aa["bytes"], 67108864);
  EXPECT_EQ(aa["count"], 33554432);
  EXPECT_EQ(aa["red_op"], "sum");
  EXPECT_EQ(aa["dtype"], "bf16");
  EXPECT_FALSE(aa.contains("root"));
  EXPECT_DOUBLE_EQ(aa["algbw_GBps"].get<double>(), 335.54432);
  EXPECT_DOUBLE_EQ(aa["busbw_GBps"].get<double>(), 335.54432 * 1.5);
}

TEST_F(HungJobTrace, StuckRanksPendingSlicesRunToTheVerdict) {
  // hang.json: detected 5.5 s after the rings' creation, i.e. 5 499 000 us
  // after t0 (base + 1 ms).
  const std::vector<json> instants = events_with(trace_, "i");
  const json* verdict = nullptr;
  for (const json& e : instants) {
    if (e["s"] == "g") verdict = &e;
  }
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ((*verdict)["name"],
            "hang verdict: ranks 0-1/3 stuck in AllReduce #6 on comm 06543c4e36ee6c61 for 5.0 s; "
            "rank 2 missing (last completed #5 on that comm)");
  EXPECT_DOUBLE_EQ((*verdict)["ts"].get<double>(), 5499000.0);
  for (int rank : {0, 1, 3}) {
    const json* stuck = slice_named(slices_, rank + 1, "STUCK AllReduce");
    ASSERT_NE(stuck, nullptr) << rank;
    EXPECT_EQ((*stuck)["tid"], 3);
    // From ready_ns (step 6 + 110 us) to the verdict.
    const double ts = 5110.0 + rank;
    EXPECT_DOUBLE_EQ((*stuck)["ts"].get<double>(), ts);
    EXPECT_DOUBLE_EQ((*stuck)["dur"].get<double>(), 5499000.0 - ts);
    EXPECT_EQ((*stuck)["args"]["state"], "running");
    EXPECT_EQ((*stuck)["args"]["hang_verdict"], "stuck");
    EXPECT_EQ((*stuck)["args"]["seq"], 6);
  }
  EXPECT_EQ(slice_named(slices_, 3, "STUCK AllReduce"), nullptr);
}

TEST_F(HungJobTrace, MissingRankHasItsLastCompletedOperationMarked) {
  std::vector<json> marks;
  for (const json& e : events_with(trace_, "i")) {
    if (e["s"] == "t") marks.push_back(e);
  }
  ASSERT_EQ(marks.size(), 1u);
  const json& m = marks[0];
  EXPECT_EQ(m["name"], "rank 2 missing: last completed AllReduce #5");
  EXPECT_EQ(m["pid"], 3);
  EXPECT_EQ(m["tid"], 3);
  // At the end of rank 2's AllReduce #5: base + 2 us + 5 ms + 320 us - t0.
  EXPECT_DOUBLE_EQ(m["ts"].get<double>(), 4322.0);
  EXPECT_EQ(m["args"]["reason"], "behind");
  EXPECT_EQ(m["args"]["missing_seq"], 6);
  EXPECT_EQ(process_names(trace_)[3], "rank 2 - MISSING");
}

TEST_F(HungJobTrace, FlowsJoinEachCollectiveAcrossRanks) {
  std::map<uint64_t, std::vector<json>> by_id;
  for (const json& e : trace_["traceEvents"]) {
    if (e["ph"] == "s" || e["ph"] == "f") by_id[e["id"].get<uint64_t>()].push_back(e);
  }
  // 3 arrows for each of #1..#5 (4 ranks), 2 for #6 (ranks 0, 1, 3).
  EXPECT_EQ(by_id.size(), 17u);
  EXPECT_EQ(trace_["otherData"]["collective_flows"], 17);
  std::map<uint64_t, std::set<int>> ranks_per_seq;
  for (const auto& [id, pair] : by_id) {
    ASSERT_EQ(pair.size(), 2u) << id;
    const json& s = pair[0]["ph"] == "s" ? pair[0] : pair[1];
    const json& f = pair[0]["ph"] == "s" ? pair[1] : pair[0];
    ASSERT_EQ(s["ph"], "s");
    ASSERT_EQ(f["ph"], "f");
    EXPECT_EQ(f["bp"], "e");
    EXPECT_EQ(s["cat"], f["cat"]);
    EXPECT_EQ(s["name"], f["name"]);
    EXPECT_LT(s["pid"].get<int>(), f["pid"].get<int>());
    const json* from = enclosing(slices_, s["pid"], s["tid"], s["ts"]);
    const json* to = enclosing(slices_, f["pid"], f["tid"], f["ts"]);
    ASSERT_NE(from, nullptr) << s.dump();
    ASSERT_NE(to, nullptr) << f.dump();
    EXPECT_EQ((*from)["args"]["comm"], (*to)["args"]["comm"]);
    EXPECT_EQ((*from)["args"]["seq"], (*to)["args"]["seq"]);
    const uint64_t seq = (*from)["args"]["seq"];
    ranks_per_seq[seq].insert(s["pid"].get<int>() - 1);
    ranks_per_seq[seq].insert(f["pid"].get<int>() - 1);
  }
  for (uint64_t seq = 1; seq <= 5; ++seq)
    EXPECT_EQ(ranks_per_seq[seq], (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(ranks_per_seq[6], (std::set<int>{0, 1, 3}));
}

TEST(Trace, WithoutHangJsonTheMissingRankIsInferred) {
  TempDir dir;
  testing::write_job(dir.path(), JobSpec{}, /*with_hang_json=*/false);
  std::vector<std::string> warnings;
  const json trace = trace_of({dir.path()}, &warnings);
  std::vector<std::string> marks, stuck;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "i") marks.push_back(e["name"]);
    if (e["ph"] == "X" && e["name"] == "STUCK AllReduce") stuck.push_back(e["name"]);
  }
  EXPECT_EQ(marks, std::vector<std::string>{"rank 2 missing: last completed AllReduce #5"});
  EXPECT_EQ(stuck.size(), 3u);
  EXPECT_EQ(process_names(trace)[3], "rank 2 - MISSING");
  EXPECT_EQ(process_names(trace)[1], "rank 0 - stuck in AllReduce #6");
}

TEST(Trace, SeveralFoldersAreAlignedOnWallClockTime) {
  // Two nodes whose monotonic clocks differ by an hour, created at the same
  // wall-clock instant: the merged trace must equal the one-host trace.
  TempDir one, a, b;
  JobSpec spec;
  testing::write_job(one.path(), spec, false);
  JobSpec na = spec, nb = spec;
  na.last_rank = 1;
  nb.first_rank = 2;
  nb.mono_base += 3600 * testing::kSec;
  testing::write_job(a.path(), na, false);
  testing::write_job(b.path(), nb, false);
  std::vector<std::string> w1, w2;
  const std::vector<json> single = events_with(trace_of({one.path()}, &w1), "X");
  const std::vector<json> merged = events_with(trace_of({a.path(), b.path()}, &w2), "X");
  ASSERT_EQ(single.size(), merged.size());
  for (size_t i = 0; i < single.size(); ++i) {
    EXPECT_EQ(single[i]["name"], merged[i]["name"]);
    EXPECT_DOUBLE_EQ(single[i]["ts"].get<double>(), merged[i]["ts"].get<double>()) << i;
    EXPECT_DOUBLE_EQ(single[i]["dur"].get<double>(), merged[i]["dur"].get<double>()) << i;
  }
}

TEST(Trace, GroupsLabelEachRankOrAreIgnoredWithAWarning) {
  TempDir dir;
  testing::write_job(dir.path(), JobSpec{}, true);
  TraceOptions options;
  std::string error;
  ASSERT_TRUE(ParallelLayout::parse("tp2-dp2", &options.layout.emplace(), &error)) << error;
  std::vector<std::string> warnings;
  EXPECT_EQ(process_names(trace_of({dir.path()}, &warnings, options)),
            (std::map<int, std::string>{{1, "rank 0 (tp0 dp0) - stuck in AllReduce #6"},
                                        {2, "rank 1 (tp1 dp0) - stuck in AllReduce #6"},
                                        {3, "rank 2 (tp0 dp1) - MISSING"},
                                        {4, "rank 3 (tp1 dp1) - stuck in AllReduce #6"}}));
  EXPECT_TRUE(warnings.empty());
  ASSERT_TRUE(ParallelLayout::parse("tp4-dp2", &options.layout.emplace(), &error));
  EXPECT_EQ(process_names(trace_of({dir.path()}, &warnings, options))[4],
            "rank 3 - stuck in AllReduce #6");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "--groups describes 8 ranks but the job has 4; ignored");
}

// An empty ring of rank 0, created at 1000 s (monotonic) / 1700000000 s (wall).
recorder::RingSnapshot rank0_snapshot(int world) {
  recorder::RingSnapshot s;
  s.rank = 0;
  s.world_size = world;
  s.created_mono_ns = 1000 * testing::kSec;
  s.created_realtime_ns = 1700000000 * testing::kSec;
  return s;
}

TEST(Trace, OverlapsEndOnlyFailedAndUntimeableRecords) {
  using recorder::OpState;
  using recorder::RecordData;
  TempDir dir;
  recorder::RingSnapshot s = rank0_snapshot(2);
  const uint64_t base = s.created_mono_ns, us = testing::kUs;
  auto rec = [&](proto::OpName name, OpState state, uint8_t flags, uint64_t launch, uint64_t ready,
                 uint64_t gs, uint64_t ge) {
    RecordData d;
    d.name = static_cast<uint16_t>(name);
    d.state = static_cast<uint8_t>(state);
    d.flags = flags;
    d.device = 0;
    d.stream = 0x10;
    d.m = d.n = d.k = d.batch = 1;
    d.nranks = 2;
    d.bytes = 1 << 20;
    d.comm_hash = 7;
    d.seq = 1;
    d.launch_ns = launch ? base + launch * us : 0;
    d.ready_ns = ready ? base + ready * us : 0;
    d.gpu_start_ns = gs ? base + gs * us : 0;
    d.gpu_end_ns = ge ? base + ge * us : 0;
    d.op_id = s.records.size();
    s.records.push_back(d);
  };
  rec(proto::OpName::kGemmEx, OpState::kCompleted, recorder::kRecTimed, 1000, 0, 1000, 1100);
  // Overlaps the first by 50 us (clock jitter): must start where it ends.
  rec(proto::OpName::kGemmEx, OpState::kCompleted, recorder::kRecTimed, 1000, 0, 1050, 1200);
  rec(proto::OpName::kAllReduce, OpState::kCompleted, recorder::kRecEndOnly, 1250, 1300, 0, 1400);
  rec(proto::OpName::kGemmEx, OpState::kFailed, 0, 1500, 0, 0, 0);
  rec(proto::OpName::kGemmEx, OpState::kCompleted, recorder::kRecTimed, 0, 0, 0, 0);
  std::string error;
  ASSERT_TRUE(recorder::write_ring_image(dir.path() + "/00000-00002.timeline", s, &error));
  dir.write("hang.json", R"({"hung": true, "summary": "rank 0 stuck", "ranks": [
      {"rank": 1, "state": "missing", "reason": "never_registered", "comm": null}]})");
  std::vector<std::string> warnings;
  const json trace = trace_of({dir.path()}, &warnings);
  EXPECT_EQ(warnings,
            std::vector<std::string>{"rank 0: 1 record(s) without a usable time, not drawn"});
  const std::vector<json> slices = events_with(trace, "X");
  ASSERT_EQ(slices.size(), 4u);  // all on stream 0x10's track, by time
  for (const json& s : slices) EXPECT_EQ(s["tid"], kHostTid + 1) << s.dump();
  EXPECT_DOUBLE_EQ(slices[0]["ts"].get<double>(), 0.0);  // t0: the first launch
  EXPECT_DOUBLE_EQ(slices[0]["dur"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(slices[1]["ts"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(slices[1]["dur"].get<double>(), 100.0);
  EXPECT_EQ(slices[2]["name"], "AllReduce");
  EXPECT_DOUBLE_EQ(slices[2]["ts"].get<double>(), 300.0);  // from ready_ns
  EXPECT_DOUBLE_EQ(slices[2]["dur"].get<double>(), 100.0);
  EXPECT_EQ(slices[2]["args"]["timing"], "not timed: drawn from when it could start to its end");
  EXPECT_FALSE(slices[2]["args"].contains("busbw_GBps"));
  // The failed launch: zero length at its launch, on its stream's track
  // (its dtype unknown, so not in its name).
  EXPECT_EQ(slices[3]["name"], "FAILED GemmEx 1x1x1");
  EXPECT_DOUBLE_EQ(slices[3]["ts"].get<double>(), 500.0);
  EXPECT_DOUBLE_EQ(slices[3]["dur"].get<double>(), 0.0);
  EXPECT_EQ(slices[3]["args"]["timing"], "no GPU time: drawn at its host launch");
  // The missing rank without a dump gets a process of its own, sorted first,
  // and a track for its mark.
  EXPECT_EQ(process_names(trace),
            (std::map<int, std::string>{{1, "rank 0"}, {2, "rank 1 - MISSING (no dump)"}}));
  EXPECT_EQ(thread_names(trace), (std::map<std::pair<int, int>, std::string>{
                                     {{1, 2}, "GPU0 stream 0x10"}, {{2, 1}, "hang marks"}}));
  std::vector<json> marks;
  for (const json& e : events_with(trace, "i")) {
    if (e["s"] == "t") marks.push_back(e);
  }
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0]["name"], "rank 1 missing: no flight-recorder dump (never_registered)");
  EXPECT_EQ(marks[0]["pid"], 2);
  EXPECT_EQ(marks[0]["tid"], kHostTid);
}

// Appends a completed host-side record (kind range) to `s`: its name, depth
// or generation (`peer`), thread, and host start and end in microseconds
// after the ring's creation.
recorder::RecordData& add_host_record(recorder::RingSnapshot* s, proto::OpName name, int peer,
                                      uint64_t tid, uint64_t start_us, uint64_t end_us) {
  recorder::RecordData d;
  d.name = static_cast<uint16_t>(name);
  d.kind = static_cast<uint8_t>(proto::OpKind::kRange);
  d.state = static_cast<uint8_t>(recorder::OpState::kCompleted);
  d.flags = recorder::kRecHost;
  d.device = -1;
  d.peer = peer;
  d.stream = tid;
  d.launch_ns = d.host_start_ns = s->created_mono_ns + start_us * testing::kUs;
  d.host_end_ns = s->created_mono_ns + end_us * testing::kUs;
  d.op_id = s->records.size();
  s->records.push_back(d);
  return s->records.back();
}

// `s` written as rank 0's dump in `dir` and converted without warnings: its
// slices by name and its track names.
struct HostTrace {
  HostTrace(const TempDir& dir, const recorder::RingSnapshot& s) {
    std::string error;
    EXPECT_TRUE(recorder::write_ring_image(dir.path() + "/00000-00001.timeline", s, &error))
        << error;
    std::vector<std::string> warnings;
    trace = trace_of({dir.path()}, &warnings);
    EXPECT_TRUE(warnings.empty()) << warnings[0];
    threads = thread_names(trace);
    for (const json& e : events_with(trace, "X")) by_name[e["name"].get<std::string>()] = e;
  }
  std::string track(const std::string& name) const {
    const json& e = by_name.at(name);
    return threads.at({e["pid"].get<int>(), e["tid"].get<int>()});
  }
  json trace;
  std::map<std::pair<int, int>, std::string> threads;
  std::map<std::string, json> by_name;
};

// Three ranks of one AllReduce, sampled out (arrival and end only): rank 2
// arrives 2 ms after the next latest. Its slice starts at its arrival, and
// its process gets the counter "arrived last (ms late)": 2 while it ran, 0
// after.
TEST(Trace, TheLastArrivalOfACollectiveIsItsRanksLatenessCounter) {
  using recorder::OpState;
  TempDir dir;
  const uint64_t us = testing::kUs;
  for (int rank = 0; rank < 3; ++rank) {
    recorder::RingSnapshot s = rank0_snapshot(3);
    s.rank = rank;
    recorder::RecordData d;
    d.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
    d.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
    d.state = static_cast<uint8_t>(OpState::kCompleted);
    d.flags = recorder::kRecEndOnly;
    d.device = 0;
    d.stream = 0x10;
    d.nranks = 3;
    d.comm_hash = 7;
    d.seq = 1;
    d.launch_ns = s.created_mono_ns + 100 * us;
    d.ready_ns = s.created_mono_ns + 5000 * us;  // the Poller saw it late: not drawn from here
    d.gpu_start_ns = s.created_mono_ns + (rank == 2 ? 3000 : 1000 - rank * 100) * us;
    d.gpu_end_ns = s.created_mono_ns + 3500 * us;
    s.records.push_back(d);
    std::string error;
    ASSERT_TRUE(
        recorder::write_ring_image(dir.path() + "/" + recorder::dump_file_name(rank, 3), s, &error))
        << error;
  }
  std::vector<std::string> warnings;
  const json trace = trace_of({dir.path()}, &warnings);
  const std::vector<json> slices = events_with(trace, "X");
  const json* late = slice_named(slices, 3, "AllReduce");
  ASSERT_NE(late, nullptr);
  EXPECT_DOUBLE_EQ((*late)["ts"].get<double>(), 2900.0);  // t0: rank 1's arrival at 900 us
  EXPECT_DOUBLE_EQ((*late)["dur"].get<double>(), 500.0);
  EXPECT_EQ((*late)["args"]["timing"],
            "not timed: drawn from its arrival (start marker) to its end");
  std::vector<json> counters;
  for (const json& e : events_with(trace, "C")) {
    if (e["name"] == "arrived last (ms late)") counters.push_back(e);
  }
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_EQ(counters[0]["pid"], 3);
  EXPECT_DOUBLE_EQ(counters[0]["ts"].get<double>(), 2900.0);
  EXPECT_DOUBLE_EQ(counters[0]["args"]["ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(counters[1]["ts"].get<double>(), 3400.0);
  EXPECT_DOUBLE_EQ(counters[1]["args"]["ms"].get<double>(), 0.0);
}

TEST(Trace, RangesAndStepsAreNamedSlicesOnHostTracks) {
  TempDir dir;
  recorder::RingSnapshot s = rank0_snapshot(1);
  s.names = {"(other)", "forward", "attention"};
  add_host_record(&s, proto::OpName::kNvtxRange, 1, 42, 10, 20).seq = 2;  // attention, in forward
  add_host_record(&s, proto::OpName::kNvtxRange, 0, 42, 0, 50).seq = 1;   // forward
  add_host_record(&s, proto::OpName::kNvtxRange, -1, 43, 5, 60).seq = 7;  // start/end, no name
  recorder::RecordData& step = add_host_record(&s, proto::OpName::kStep, 0, 42, 0, 100);
  step.flags |= recorder::kRecMeasured;  // GPU busy 75 us of its 100
  step.bytes = 75 * testing::kUs;
  step.count = 2;
  HostTrace t(dir, s);
  ASSERT_EQ(t.by_name.size(), 4u) << t.trace.dump(1);
  auto& by_name = t.by_name;
  const auto track = [&](const std::string& name) { return t.track(name); };
  EXPECT_EQ(track("forward"), "NVTX thread 42");
  EXPECT_EQ(track("attention"), "NVTX thread 42");
  EXPECT_EQ(track("range #7"), "NVTX start/end ranges");
  EXPECT_EQ(track("step"), "training steps");
  EXPECT_EQ(by_name["forward"]["cat"], "range");
  EXPECT_DOUBLE_EQ(by_name["attention"]["ts"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(by_name["attention"]["dur"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(by_name["forward"]["dur"].get<double>(), 50.0);
  EXPECT_EQ(by_name["attention"]["args"]["depth"], 1);
  EXPECT_EQ(by_name["attention"]["args"]["nvtx"], "push/pop");
  EXPECT_EQ(by_name["range #7"]["args"]["nvtx"], "start/end");
  EXPECT_DOUBLE_EQ(by_name["step"]["dur"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(by_name["step"]["args"]["gpu_idle_ratio"].get<double>(), 0.25);
  EXPECT_EQ(by_name["step"]["args"]["untimed_ops"], 2);
  EXPECT_FALSE(by_name["forward"]["args"].contains("gpu_idle_ratio"));
  const std::vector<json> counters = events_with(t.trace, "C");
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0]["name"], "GPU idle % per step");
  EXPECT_DOUBLE_EQ(counters[0]["args"]["idle"].get<double>(), 25.0);
}

// Calls of traced Python functions, GC pauses, DataLoader waits and
// synchronous allocations are slices on per-thread host tracks; kernel-launch
// samples are a counter of launches per millisecond whose integral over time
// is the number launched.
TEST(Trace, HostEventsAreSlicesAndLaunchSamplesACounter) {
  TempDir dir;
  recorder::RingSnapshot s = rank0_snapshot(1);
  s.names = {"(other)", "forward", "torch.cuda.synchronize", "train_step"};
  add_host_record(&s, proto::OpName::kGcPause, 2, 42, 0, 30).bytes = 1234;  // objects freed
  add_host_record(&s, proto::OpName::kLoaderWait, 0, 42, 40, 90);
  add_host_record(&s, proto::OpName::kPythonCall, 1, 42, 33, 38).seq = 2;  // inside train_step
  add_host_record(&s, proto::OpName::kPythonCall, 0, 42, 31, 39).seq = 3;
  add_host_record(&s, proto::OpName::kDeviceMalloc, 0, 43, 100, 110).bytes = 64ull << 20;
  add_host_record(&s, proto::OpName::kDeviceFree, 0, 43, 120, 121);                  // size unknown
  add_host_record(&s, proto::OpName::kKernelLaunches, -1, 0, 0, 100).count = 500;    // 5 per us
  add_host_record(&s, proto::OpName::kKernelLaunches, -1, 0, 100, 200).count = 100;  // adjacent
  add_host_record(&s, proto::OpName::kKernelLaunches, -1, 0, 300, 400).count = 200;  // after a gap
  // One that measured its host's time blocked on its GPU: 25 of its 100 us.
  recorder::RecordData& measured =
      add_host_record(&s, proto::OpName::kKernelLaunches, -1, 0, 500, 600);
  measured.count = 100;
  measured.flags |= recorder::kRecMeasured;
  measured.bytes = 25'000;
  HostTrace t(dir, s);
  ASSERT_EQ(t.by_name.size(), 6u) << t.trace.dump(1);
  auto& by_name = t.by_name;
  const auto& threads = t.threads;
  const json& trace = t.trace;
  const auto track = [&](const std::string& name) { return t.track(name); };
  EXPECT_EQ(track("GC gen 2"), "Python thread 42");
  EXPECT_EQ(track("DataLoader wait"), "Python thread 42");
  EXPECT_EQ(track("torch.cuda.synchronize"), "Python thread 42");
  EXPECT_EQ(track("train_step"), "Python thread 42");
  EXPECT_DOUBLE_EQ(by_name["torch.cuda.synchronize"]["ts"].get<double>(), 33.0);
  EXPECT_DOUBLE_EQ(by_name["torch.cuda.synchronize"]["dur"].get<double>(), 5.0);
  EXPECT_EQ(by_name["torch.cuda.synchronize"]["args"]["depth"], 1);
  EXPECT_EQ(by_name["torch.cuda.synchronize"]["args"]["python"], "traced function");
  EXPECT_DOUBLE_EQ(by_name["train_step"]["dur"].get<double>(), 8.0);
  EXPECT_EQ(by_name["train_step"]["args"]["depth"], 0);
  EXPECT_EQ(track("cudaMalloc 64 MiB"), "cudaMalloc/cudaFree thread 43");
  EXPECT_EQ(track("cudaFree"), "cudaMalloc/cudaFree thread 43");
  EXPECT_EQ(by_name["GC gen 2"]["args"]["collected"], 1234);
  EXPECT_EQ(by_name["GC gen 2"]["args"]["generation"], 2);
  EXPECT_DOUBLE_EQ(by_name["GC gen 2"]["dur"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(by_name["DataLoader wait"]["dur"].get<double>(), 50.0);
  EXPECT_EQ(by_name["cudaMalloc 64 MiB"]["args"]["bytes"], 64ull << 20);
  // No track for the samples: they are not slices.
  std::set<std::string> track_names;
  for (const auto& [key, name] : threads) track_names.insert(name);
  EXPECT_EQ(track_names, (std::set<std::string>{"Python thread 42",
                                                "cudaMalloc/cudaFree thread 43"}));
  std::vector<std::pair<double, double>> counter;  // (ts us, launches per ms)
  std::vector<std::pair<double, double>> blocked;  // (ts us, percent)
  for (const json& e : events_with(trace, "C")) {
    if (e["name"] == "host waiting for its GPU (%)") {
      blocked.emplace_back(e["ts"].get<double>(), e["args"]["percent"].get<double>());
      continue;
    }
    ASSERT_EQ(e["name"], "kernel launches per ms");
    counter.emplace_back(e["ts"].get<double>(), e["args"]["launches"].get<double>());
  }
  const std::vector<std::pair<double, double>> want = {
      {0, 5000}, {100, 1000}, {200, 0}, {300, 2000}, {400, 0}, {500, 1000}, {600, 0}};
  EXPECT_EQ(counter, want);
  double launched = 0;  // the counter's integral: launches per ms x ms
  for (size_t i = 0; i + 1 < counter.size(); ++i) {
    launched += counter[i].second * (counter[i + 1].first - counter[i].first) / 1000.0;
  }
  EXPECT_DOUBLE_EQ(launched, 900.0);
  // Only the measured sample has the host's share: none for the others.
  const std::vector<std::pair<double, double>> want_blocked = {{500, 25}, {600, 0}};
  EXPECT_EQ(blocked, want_blocked);
}

}  // namespace
}  // namespace xpu_timer::timeline

namespace xpu_timer::timeline {
namespace {

// A copy's slice is named by its direction and size, the size in binary units.
TEST(OpLabel, CopiesShowTheirDirectionAndSize) {
  recorder::RecordData r{};
  r.name = static_cast<uint16_t>(proto::OpName::kMemcpyH2D);
  r.bytes = 64ull << 20;
  EXPECT_EQ(op_label(r), "MemcpyH2D 64 MiB");
  r.name = static_cast<uint16_t>(proto::OpName::kMemcpyPeer);
  r.bytes = 1536;
  EXPECT_EQ(op_label(r), "MemcpyPeer 1.5 KiB");
  r.name = static_cast<uint16_t>(proto::OpName::kMemcpyD2H);
  r.bytes = 4;
  EXPECT_EQ(op_label(r), "MemcpyD2H 4 B");
  r.bytes = 3ull << 30;
  EXPECT_EQ(op_label(r), "MemcpyD2H 3 GiB");
}

}  // namespace
}  // namespace xpu_timer::timeline
