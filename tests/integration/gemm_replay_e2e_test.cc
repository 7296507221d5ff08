// End to end: GEMM replay and the timeline diff. Two real supervisors over the
// same Python sim job (every cuBLAS/cuBLASLt entry point, two GEMM shapes, a
// train_step NVTX range per step), B with one shape made 3x slower by the
// simulated cuBLAS (XPU_TIMER_SIM_SLOW_GEMM); each dumps its rings on POST
// /dump/timeline. xpu_timer_gemm_replay replays B's dump on the simulated GPU
// (which does not slow anything: the knob is the job's) and must flag exactly
// that shape; xpu_timer_gen_trace_timeline --diff A B must put that shape's
// rows first with a latency ratio of 3.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/recorder_ring.h"
#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace gemm_replay_e2e {

constexpr int kSteps = 30;
constexpr int kApis = 7;  // --gemm-api all: one call of each per shape and step
// 2*m*n*k at the sim's 100 TFLOP/s: 343.6 us and 85.9 us a call (batch 1).
constexpr const char* kShape1 = "4096,2048,2048";
constexpr const char* kShape2 = "2048,2048,1024";
constexpr double kSlowFactor = 3;
// Each step first queues this much GPU work that no CUDA call shows, so the
// step's GEMMs run back to back behind it as on a GPU the host keeps ahead
// of: a GEMM's events then time the GEMM alone, unless the host is held up
// for longer than this within one step (a loaded CI machine held one call
// 17 ms; without the lead that call's time counted in the mean and put an
// unslowed shape first in the diff).
constexpr double kGpuLeadMs = 60;

// Runs the job to the end of its loop under a supervisor, dumps its rings and
// returns the dump folder once every GEMM of the job is final in it (the
// Poller finishes a record within a pass of its completion; a dump taken
// before that is taken again, 2 s later, as the supervisor allows).
std::string dump_of_job(const std::string& name, std::vector<std::string> env) {
  env.push_back("XPU_TIMER_SAMPLE_PER_SEC=0");  // every call timed
  env.push_back("XPU_TIMER_STEP_RANGE=train_step");
  SupervisedJob job(
      name, {"--hang-timeout", "300"},
      sim_job(1, true,
              {"--steps", std::to_string(kSteps), "--gemm-api", "all", "--gemms-per-step",
               std::to_string(kApis), "--gemm", kShape1, "--gemm2", kShape2, "--bytes", "4096",
               "--nvtx", "--gpu-lead-ms", std::to_string(kGpuLeadMs), "--end-sleep-s", "120"}),
      env);
  EXPECT_GT(job.port(), 0) << job.log();
  EXPECT_TRUE(job.child().wait_for_output("rank 0 loop done", std::chrono::seconds(120)))
      << job.log();
  std::string dir;
  const bool final = wait_until(
      [&] {
        const auto reply = http_post(job.port(), "/dump/timeline");
        if (!reply.has_value() || reply->status != 200) return false;
        dir = nlohmann::json::parse(reply->body).at("dir").get<std::string>();
        const std::string bytes = read_file(dir + "/" + recorder::dump_file_name(0, 1));
        recorder::RingSnapshot s;
        std::string error;
        if (!recorder::RingReader::read_image(bytes.data(), bytes.size(), &s, &error)) return false;
        int completed = 0;
        for (const recorder::RecordData& r : s.records) {
          completed += r.kind == static_cast<uint8_t>(proto::OpKind::kGemm) &&
                       r.state == static_cast<uint8_t>(recorder::OpState::kCompleted);
        }
        return completed == 2 * kApis * kSteps;
      },
      std::chrono::seconds(60));
  EXPECT_TRUE(final) << "no dump with every GEMM completed; last: " << dir << "\n" << job.log();
  job.child().signal(SIGTERM);
  EXPECT_TRUE(job.child().wait_for(std::chrono::seconds(30)).has_value());
  return dir;
}

std::string tool(const std::string& name) { return build_dir() + "/bin/" + name; }

TEST(GemmReplayE2E, ReplayFlagsTheSlowedShapeAndTheDiffPutsItFirst) {
  const std::string a = dump_of_job("replay-a", {});
  const std::string b =
      dump_of_job("replay-b", {std::string("XPU_TIMER_SIM_SLOW_GEMM=") + kShape2,
                               "XPU_TIMER_SIM_SLOW_GEMM_FACTOR=" + std::to_string(kSlowFactor)});
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());

  // The replay, on the simulated libraries (they are the sim job's too).
  const std::string json_path = b + "/replay.json";
  ExitStatus st = run_to_end({tool("xpu_timer_gemm_replay"), "--path", b, "--json", json_path,
                              "--lib-dir", sim_lib_dir(), "--warmup", "10", "--reps", "9"},
                             {}, b + "/replay.log", std::chrono::seconds(120));
  const std::string out = read_file(b + "/replay.log");
  ASSERT_TRUE(st.exited && st.code == 0) << describe(st) << out;
  const auto j = nlohmann::json::parse(read_file(json_path));
  const auto& rows = j.at("rows");
  ASSERT_EQ(rows.size(), 2u * kApis) << out;
  // API -> (dtype, transposes, batch) as sim_gemm calls them.
  const std::map<std::string, std::tuple<std::string, std::string, int>> apis = {
      {"GemmEx", {"bf16", "NN", 1}},
      {"GemmStridedBatchedEx", {"bf16", "NN", 2}},
      {"Sgemm", {"fp32", "NN", 1}},
      {"Hgemm", {"fp16", "NN", 1}},
      {"SgemmStridedBatched", {"fp32", "NN", 2}},
      {"HgemmStridedBatched", {"fp16", "NN", 2}},
      {"LtMatmul", {"bf16", "TN", 2}}};
  std::set<std::string> seen;
  std::vector<std::pair<int, int>> order;  // (shape, batch) of each row, in order
  for (const auto& r : rows) {
    const std::string api = r.at("api");
    ASSERT_TRUE(apis.count(api)) << api;
    const auto& [dtype, ops, batch] = apis.at(api);
    EXPECT_EQ(r.at("dtype"), dtype) << api;
    EXPECT_EQ(r.at("transa").get<std::string>() + r.at("transb").get<std::string>(), ops) << api;
    EXPECT_EQ(r.at("batch"), batch) << api;
    EXPECT_EQ(r.at("calls"), kSteps) << api;
    EXPECT_EQ(r.at("timed"), kSteps) << api;
    const int shape = r.at("m") == 4096 ? 1 : 2;
    EXPECT_EQ(r.at("n"), 2048);
    EXPECT_EQ(r.at("k"), shape == 1 ? 2048 : 1024);
    seen.insert(api + std::to_string(shape));
    order.emplace_back(shape, batch);
    // The replay's time is the model's: back-to-back simulated GEMMs are
    // timed exactly, up to cudaEventElapsedTime's float milliseconds.
    const double model_us = (shape == 1 ? 343.597 : 85.899) * batch;
    EXPECT_NEAR(r.at("now_us_per_call").get<double>(), model_us, 0.01) << api;
    // The job's time, the median of its calls: exact, every call ran right
    // after another on the stream (kGpuLeadMs).
    const double factor = shape == 2 ? kSlowFactor : 1.0;
    EXPECT_NEAR(r.at("ratio").get<double>(), factor, 0.1 * factor) << api << "\n" << out;
    EXPECT_EQ(r.at("slower"), shape == 2) << api << "\n" << out;
  }
  EXPECT_EQ(seen.size(), 2u * kApis);
  // Largest time in the job first: 687 us (shape 1, batch 2), 515 us (shape
  // 2 slowed, batch 2), 344 us, 258 us.
  const std::vector<std::pair<int, int>> expected_order = {{1, 2}, {1, 2}, {1, 2}, {1, 2}, {2, 2},
                                                           {2, 2}, {2, 2}, {2, 2}, {1, 1}, {1, 1},
                                                           {1, 1}, {2, 1}, {2, 1}, {2, 1}};
  EXPECT_EQ(order, expected_order) << out;
  EXPECT_NE(out.find("SLOWER"), std::string::npos) << out;

  // The diff: per step (both dumps have train_step steps), shape 2 first.
  const std::string diff_json = b + "/diff.json", diff_trace = b + "/diff_trace.json";
  st = run_to_end({tool("xpu_timer_gen_trace_timeline"), "--diff", a, b, "--output", diff_json,
                   "--trace", diff_trace},
                  {}, b + "/diff.log", std::chrono::seconds(60));
  const std::string diff_out = read_file(b + "/diff.log");
  ASSERT_TRUE(st.exited && st.code == 0) << describe(st) << diff_out;
  const auto d = nlohmann::json::parse(read_file(diff_json));
  EXPECT_EQ(d.at("unit"), "step") << diff_out;
  const auto& drows = d.at("rows");
  ASSERT_GE(drows.size(), 2u * kApis) << diff_out;
  for (size_t i = 0; i < drows.size(); ++i) {
    const auto& r = drows[i];
    const bool slowed = r.at("shape").get<std::string>().rfind("m=2048 n=2048 k=1024", 0) == 0;
    EXPECT_EQ(slowed, i < kApis) << i << "\n" << diff_out;
    if (i < kApis) {
      EXPECT_NEAR(r.at("ratio").get<double>(), kSlowFactor, 0.05 * kSlowFactor) << diff_out;
      EXPECT_DOUBLE_EQ(r.at("a").at("calls_per_unit").get<double>(), 1.0) << diff_out;
      EXPECT_DOUBLE_EQ(r.at("b").at("calls_per_unit").get<double>(), 1.0) << diff_out;
    }
  }
  const auto trace = nlohmann::json::parse(read_file(diff_trace));
  int slices = 0;
  for (const auto& e : trace.at("traceEvents")) slices += e.at("ph") == "X";
  EXPECT_EQ(slices, 2 * static_cast<int>(drows.size())) << diff_out;
}

}  // namespace gemm_replay_e2e
}  // namespace xpu_timer::testing
