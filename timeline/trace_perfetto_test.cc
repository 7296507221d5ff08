// What a viewer makes of the trace: slices named by operation so that
// Perfetto's per-name statistics add up calls of one kind, sampled-out
// launches as a counter per stream (or, with sampled_out_slices, zero-length
// slices on that stream's track), the stream tracks of operations published
// without their device, and the processes when hang.json says "no hang".
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "timeline/op_describe.h"
#include "timeline/test_dumps.h"
#include "timeline/trace_builder.h"
#include "timeline/trace_queries.h"

namespace xpu_timer::timeline {
namespace {

using nlohmann::json;
using testing::events_with;
using testing::JobSpec;
using testing::process_names;
using testing::TempDir;
using testing::thread_names;
using testing::trace_of;

constexpr char kSampledOut[] = "launches (sampled out)";
constexpr char kComputeTrack[] = "GPU0 stream 0x7f00a0001000";

// (pid, counter name, ts us, value) of every sampled-out launch counter event.
std::vector<std::tuple<int, std::string, double, double>> sampled_out_counters(const json& t) {
  std::vector<std::tuple<int, std::string, double, double>> out;
  for (const json& e : events_with(t, "C")) {
    if (!e["args"].contains(kSampledOut)) continue;
    out.emplace_back(e["pid"], e["name"], e["ts"], e["args"][kSampledOut]);
  }
  return out;
}

// The trace of the dumps in `dir` as converted by default and with
// sampled_out_slices, both without a warning.
std::pair<json, json> plain_and_flagged(const TempDir& dir) {
  std::vector<std::string> warnings;
  json plain = trace_of({dir.path()}, &warnings);
  TraceOptions options;
  options.sampled_out_slices = true;
  json flagged = trace_of({dir.path()}, &warnings, options);
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  return {std::move(plain), std::move(flagged)};
}

// The 4-rank job of test_dumps.h: 6 sampled-out GEMMs per rank, launched 5 us
// into each 1 ms step (rank r r us later; t0 is rank 0's first launch, 1 ms
// after the rings' creation).
TEST(SampledOut, LaunchesAreACounterOfTheirStreamNotSlices) {
  TempDir dir;
  testing::write_job(dir.path(), JobSpec{}, true);
  std::vector<std::string> warnings;
  const json trace = trace_of({dir.path()}, &warnings);
  EXPECT_TRUE(warnings.empty());
  for (const json& s : events_with(trace, "X")) {
    EXPECT_NE(s["args"]["state"], "untimed") << s.dump();
  }
  std::vector<std::tuple<int, std::string, double, double>> want;
  for (int r = 0; r < 4; ++r) {
    for (int step = 1; step <= 6; ++step) {
      want.emplace_back(r + 1, "GPU" + std::to_string(r) + " stream 0x7f00a0001000",
                        (step - 1) * 1000.0 + 5 + r, step);
    }
  }
  EXPECT_EQ(sampled_out_counters(trace), want);
}

TEST(SampledOut, TheFlagDrawsEachLaunchAsAZeroLengthSliceOnItsStream) {
  TempDir dir;
  testing::write_job(dir.path(), JobSpec{}, true);
  const auto [plain, trace] = plain_and_flagged(dir);
  EXPECT_TRUE(sampled_out_counters(trace).empty());
  EXPECT_EQ(thread_names(trace), thread_names(plain));  // no track of their own
  std::vector<json> launches;
  for (const json& s : events_with(trace, "X")) {
    if (s["args"]["state"] == "untimed") launches.push_back(s);
  }
  ASSERT_EQ(launches.size(), 24u);
  std::vector<double> rank0_ts;
  for (const json& s : launches) {
    EXPECT_EQ(s["name"], "sampled out: GemmEx bf16 4096x4096x1024");
    EXPECT_EQ(s["tid"], 2);  // the compute stream's track
    EXPECT_EQ(s["dur"], 0);
    EXPECT_EQ(s["args"]["timing"], "sampled out: drawn at its host launch, no GPU time");
    if (s["pid"] == 1) rank0_ts.push_back(s["ts"]);
  }
  EXPECT_EQ(thread_names(trace).at({1, 2}), kComputeTrack);
  EXPECT_EQ(rank0_ts, (std::vector<double>{5, 1005, 2005, 3005, 4005, 5005}));
}

recorder::RecordData gemm(int32_t device, uint64_t stream, bool timed, uint64_t at_us) {
  recorder::RecordData d;
  d.name = static_cast<uint16_t>(proto::OpName::kGemmEx);
  d.kind = static_cast<uint8_t>(proto::OpKind::kGemm);
  d.m = d.n = d.k = 8;
  d.device = device;
  d.stream = stream;
  d.launch_ns = (1000 + at_us) * testing::kUs;
  if (timed) {
    d.state = static_cast<uint8_t>(recorder::OpState::kCompleted);
    d.flags = recorder::kRecTimed;
    d.gpu_start_ns = d.launch_ns + 10 * testing::kUs;
    d.gpu_end_ns = d.gpu_start_ns + 10 * testing::kUs;
  } else {
    d.state = static_cast<uint8_t>(recorder::OpState::kUntimed);
  }
  return d;
}

void write_rank(const TempDir& dir, int rank, std::vector<recorder::RecordData> records) {
  recorder::RingSnapshot s;
  s.rank = rank;
  s.world_size = 2;
  s.created_mono_ns = 1000 * testing::kUs;
  s.created_realtime_ns = 1700000000 * testing::kSec;
  s.records = std::move(records);
  for (size_t i = 0; i < s.records.size(); ++i) s.records[i].op_id = i;
  std::string error;
  ASSERT_TRUE(
      recorder::write_ring_image(dir.path() + "/" + recorder::dump_file_name(rank, 2), s, &error))
      << error;
}

// A sampled-out GEMM comes without its device: its stream names it when the
// rank used that stream on one device only, or when the rank used one device;
// otherwise its track says the device is unknown (never "GPU?").
TEST(SampledOut, RecordsWithoutADeviceJoinTheirStreamsTrack) {
  TempDir dir;
  write_rank(dir, 0,
             {gemm(0, 0x10, true, 0), gemm(1, 0x20, true, 100), gemm(0, 0, true, 200),
              gemm(1, 0, true, 300), gemm(-1, 0x10, false, 400), gemm(-1, 0x20, false, 500),
              gemm(-1, 0, false, 600), gemm(-1, 0x30, false, 700)});
  write_rank(dir, 1, {gemm(3, 0x10, true, 0), gemm(-1, 0x40, false, 100)});
  const auto [plain, flagged] = plain_and_flagged(dir);

  // Only tracks with slices are named.
  using Tracks = std::map<std::pair<int, int>, std::string>;
  // Tids follow (device, stream): rank 0's two unknown-device tracks are 2, 3.
  const Tracks timed = {{{1, 4}, "GPU0 stream 0x0"},
                        {{1, 5}, "GPU0 stream 0x10"},
                        {{1, 6}, "GPU1 stream 0x0"},
                        {{1, 7}, "GPU1 stream 0x20"},
                        {{2, 2}, "GPU3 stream 0x10"}};
  EXPECT_EQ(thread_names(plain), timed);
  std::set<std::pair<int, std::string>> counters;
  for (const auto& [pid, name, ts, value] : sampled_out_counters(plain)) {
    EXPECT_EQ(value, 1);
    counters.emplace(pid, name);
  }
  EXPECT_EQ(counters, (std::set<std::pair<int, std::string>>{{1, "GPU0 stream 0x10"},
                                                             {1, "GPU1 stream 0x20"},
                                                             {1, "stream 0x0 (device unknown)"},
                                                             {1, "stream 0x30 (device unknown)"},
                                                             {2, "GPU3 stream 0x40"}}));

  const Tracks tracks = thread_names(flagged);
  std::map<double, std::string> launch_track;  // (pid 1) ts -> track
  for (const json& s : events_with(flagged, "X")) {
    if (s["args"]["state"] != "untimed") continue;
    EXPECT_EQ(s["name"], "sampled out: GemmEx 8x8x8");
    launch_track[s["ts"].get<double>() + 1000 * (s["pid"].get<int>() - 1)] =
        tracks.at({s["pid"], s["tid"]});
  }
  EXPECT_EQ(launch_track, (std::map<double, std::string>{{400, "GPU0 stream 0x10"},
                                                         {500, "GPU1 stream 0x20"},
                                                         {600, "stream 0x0 (device unknown)"},
                                                         {700, "stream 0x30 (device unknown)"},
                                                         {1100, "GPU3 stream 0x40"}}));
}

// hang.json saying "no hang" (a dump on request): pending work is in flight,
// nobody is a culprit, and the ranks keep their order.
TEST(Processes, WithoutAHangPendingWorkIsInFlightAndRanksKeepTheirOrder) {
  TempDir dir;
  testing::write_job(dir.path(), JobSpec{}, false);
  dir.write("hang.json", R"({"hung": false, "ranks": []})");
  std::vector<std::string> warnings;
  const json trace = trace_of({dir.path()}, &warnings);
  EXPECT_EQ(process_names(trace),
            (std::map<int, std::string>{{1, "rank 0 - AllReduce #6 in flight at dump"},
                                        {2, "rank 1 - AllReduce #6 in flight at dump"},
                                        {3, "rank 2"},
                                        {4, "rank 3 - AllReduce #6 in flight at dump"}}));
  std::map<int, int> sort_index;
  for (const json& e : events_with(trace, "M")) {
    if (e["name"] == "process_sort_index") sort_index[e["pid"]] = e["args"]["sort_index"];
  }
  EXPECT_EQ(sort_index, (std::map<int, int>{{1, 0}, {2, 1}, {3, 2}, {4, 3}}));
  int pending = 0;
  for (const json& s : events_with(trace, "X")) pending += s["name"] == "PENDING AllReduce";
  EXPECT_EQ(pending, 3);
}

TEST(SliceLabel, NamesTheKindOfCallAndAGemmsDtypeAndShape) {
  recorder::RecordData r{};
  r.name = static_cast<uint16_t>(proto::OpName::kAllGather);
  r.seq = 7;
  r.bytes = 1 << 20;
  EXPECT_EQ(slice_label(r), "AllGather");
  EXPECT_EQ(op_label(r), "AllGather #7");
  r.name = static_cast<uint16_t>(proto::OpName::kMemcpyH2D);
  EXPECT_EQ(slice_label(r), "MemcpyH2D");
  r.name = static_cast<uint16_t>(proto::OpName::kGemmStridedBatchedEx);
  EXPECT_EQ(slice_label(r), "GemmStridedBatchedEx");  // shape unknown
  r.m = 128;
  r.n = 256;
  r.k = 64;
  r.batch = 8;
  EXPECT_EQ(slice_label(r), "GemmStridedBatchedEx 128x256x64 x8");  // dtype unknown
  r.dtype = static_cast<uint8_t>(proto::DType::kF16);
  EXPECT_EQ(slice_label(r), "GemmStridedBatchedEx fp16 128x256x64 x8");
  r.dtype = 200;  // a hostile value names no dtype
  EXPECT_EQ(slice_label(r), "GemmStridedBatchedEx 128x256x64 x8");
}

}  // namespace
}  // namespace xpu_timer::timeline
