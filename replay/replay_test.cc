#include <gtest/gtest.h>

#include "common/op_names.h"
#include "common/recorder_ring.h"
#include "replay/gemm_groups.h"
#include "replay/gemm_runner.h"
#include "replay/replay_report.h"

namespace xpu_timer::replay {
namespace {

using proto::DType;
using proto::OpName;
using recorder::OpState;
using recorder::RecordData;

RecordData gemm(OpName api, DType dtype, uint8_t ops, uint32_t m, uint32_t n, uint32_t k,
                uint32_t batch, uint64_t gpu_ns) {
  RecordData r;
  r.name = static_cast<uint16_t>(api);
  r.kind = static_cast<uint8_t>(proto::OpKind::kGemm);
  r.dtype = static_cast<uint8_t>(dtype);
  r.gemm_ops = ops;
  r.m = m;
  r.n = n;
  r.k = k;
  r.batch = batch;
  if (gpu_ns > 0) {
    r.state = static_cast<uint8_t>(OpState::kCompleted);
    r.flags = recorder::kRecTimed;
    r.gpu_start_ns = 1000;
    r.gpu_end_ns = 1000 + gpu_ns;
  } else {
    r.state = static_cast<uint8_t>(OpState::kUntimed);
  }
  return r;
}

// Two ranks: rank 0 runs 3 timed NN GemmEx of 100 us and one sampled out, and
// a failed one; rank 1 one TN GemmEx of the same shape (another group: the
// transposes differ) and 2 timed LtMatmul of 1 ms (the largest time).
timeline::LoadedDumps two_ranks() {
  timeline::LoadedDumps d;
  d.ranks.resize(2);
  const uint8_t nn = recorder::gemm_ops_of(0, 0), tn = recorder::gemm_ops_of(1, 0);
  auto& r0 = d.ranks[0].ring.records;
  for (int i = 0; i < 3; ++i)
    r0.push_back(gemm(OpName::kGemmEx, DType::kBF16, nn, 64, 32, 16, 1, 100000));
  r0.push_back(gemm(OpName::kGemmEx, DType::kBF16, nn, 64, 32, 16, 1, 0));
  RecordData failed = gemm(OpName::kGemmEx, DType::kBF16, nn, 64, 32, 16, 1, 0);
  failed.state = static_cast<uint8_t>(OpState::kFailed);
  r0.push_back(failed);
  RecordData nccl;
  nccl.name = static_cast<uint16_t>(OpName::kAllReduce);
  nccl.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  r0.push_back(nccl);
  auto& r1 = d.ranks[1].ring.records;
  r1.push_back(gemm(OpName::kGemmEx, DType::kBF16, tn, 64, 32, 16, 1, 50000));
  r1.push_back(gemm(OpName::kLtMatmul, DType::kBF16, tn, 64, 32, 16, 2, 1000000));
  r1.push_back(gemm(OpName::kLtMatmul, DType::kBF16, tn, 64, 32, 16, 2, 1000000));
  return d;
}

TEST(GemmGroups, GroupsByApiDtypeTransposesAndShapeLargestTimeFirst) {
  const std::vector<GemmGroup> g = group_gemms(two_ranks());
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(key_label(g[0].key), "LtMatmul bf16 TN m=64 n=32 k=16 batch=2");
  EXPECT_EQ(g[0].calls, 2u);
  EXPECT_EQ(g[0].timed_ns, 2000000u);
  EXPECT_EQ(key_label(g[1].key), "GemmEx bf16 NN m=64 n=32 k=16 batch=1");
  EXPECT_EQ(g[1].calls, 4u);  // the failed call is not one
  EXPECT_EQ(g[1].timed, 3u);
  EXPECT_DOUBLE_EQ(g[1].job_ns_per_call(), 100000.0);
  EXPECT_DOUBLE_EQ(g[1].job_total_ns(), 400000.0);
  EXPECT_EQ(key_label(g[2].key), "GemmEx bf16 TN m=64 n=32 k=16 batch=1");
  EXPECT_EQ(g[2].calls, 1u);
  GemmKey unknown;
  unknown.api = static_cast<uint16_t>(OpName::kSgemm);
  unknown.dtype = static_cast<uint8_t>(DType::kF32);
  EXPECT_EQ(key_label(unknown), "Sgemm fp32 ?? m=0 n=0 k=0 batch=0");
}

// A call that its stream started while idle holds the host's launch gap as
// well (milliseconds on a loaded host): the per-call time compared with the
// replay is the median of the timed calls; the total stays their sum.
TEST(GemmGroups, PerCallIsTheMedianOfTheTimedCallsTheTotalTheirSum) {
  timeline::LoadedDumps d;
  d.ranks.resize(1);
  const uint8_t nn = recorder::gemm_ops_of(0, 0);
  for (const uint64_t ns : {100000ull, 101000ull, 99000ull, 5000000ull}) {
    d.ranks[0].ring.records.push_back(gemm(OpName::kGemmEx, DType::kBF16, nn, 64, 32, 16, 1, ns));
  }
  const std::vector<GemmGroup> g = group_gemms(d);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].timed, 4u);
  EXPECT_EQ(g[0].timed_ns, 5300000u);
  EXPECT_DOUBLE_EQ(g[0].job_ns_per_call(), 100000.0);  // the lower median of four
  EXPECT_DOUBLE_EQ(g[0].job_total_ns(), 5300000.0);
  ReplayRow row;
  row.group = g[0];
  row.now.ok = true;
  row.now.ns_per_call = 100000;
  EXPECT_FALSE(row.flagged()) << "one launch gap made the whole group slower";
}

TEST(ReplayReport, FlagsAJobMoreThan15PercentSlowerPerCall) {
  ReplayReport r;
  r.source = "DIR";
  r.ranks = 2;
  r.device = "0";
  r.libraries = "libcublas.so.13, libcublasLt.so.13";
  r.warmup = 10;
  r.reps = 50;
  const std::vector<GemmGroup> g = group_gemms(two_ranks());
  r.rows.push_back({g[0], {true, 400000.0, ""}});  // job 2.5x slower: flagged
  r.rows.push_back({g[1], {true, 87000.0, ""}});   // 1.149x: not flagged
  r.rows.push_back({g[2], {false, 0, "dtype uint8 is not replayed"}});
  EXPECT_TRUE(r.rows[0].flagged());
  EXPECT_DOUBLE_EQ(r.rows[0].slowdown(), 2.5);
  EXPECT_FALSE(r.rows[1].flagged());
  EXPECT_FALSE(r.rows[2].flagged());
  EXPECT_EQ(r.rows[2].slowdown(), 0);
  const std::string table = report_table(r);
  EXPECT_NE(
      table.find("\nLtMatmul               bf16   TN m=64 n=32 k=16 b=2                   2 "
                 "      2      2.000     1000.0      400.0      0.0      0.0    2.50  SLOWER\n"),
      std::string::npos)
      << table;
  EXPECT_NE(table.find("      87.0      0.0      0.0    1.15\n"), std::string::npos) << table;
  EXPECT_NE(table.find("(dtype uint8 is not replayed)"), std::string::npos) << table;
  const nlohmann::json j = report_json(r);
  EXPECT_EQ(j["rows"][0]["slower"], true);
  EXPECT_EQ(j["rows"][0]["transa"], "T");
  EXPECT_DOUBLE_EQ(j["rows"][0]["job_us_per_call"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(j["rows"][0]["now_us_per_call"].get<double>(), 400.0);
  EXPECT_EQ(j["rows"][2]["now_us_per_call"], nullptr);
  EXPECT_EQ(j["rows"][1]["slower"], false);
}

TEST(GemmRunner, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
}

// The simulated cuBLAS: 2*b*m*n*k at 100 TFLOP/s, back-to-back calls timed
// exactly (tests/simgpu/README.md), so the median is the model's duration up
// to the float milliseconds of cudaEventElapsedTime.
TEST(GemmRunner, ReplaysEveryApiOnTheSimulatedGpuAtTheModelsTime) {
  ReplayOptions o;
  o.lib_dir = XPU_TIMER_SIM_LIB_DIR;
  o.warmup = 10;
  o.reps = 9;
  std::string error;
  auto runner = GemmRunner::create(o, &error);
  ASSERT_NE(runner, nullptr) << error;
  EXPECT_EQ(runner->api().cublas_path, std::string(XPU_TIMER_SIM_LIB_DIR) + "/libcublas.so.13");
  const uint8_t tn = recorder::gemm_ops_of(1, 0), nn = recorder::gemm_ops_of(0, 0);
  struct Case {
    OpName api;
    DType dtype;
    uint8_t ops;
    uint32_t batch;
  } cases[] = {{OpName::kGemmEx, DType::kBF16, nn, 1},
               {OpName::kGemmStridedBatchedEx, DType::kF16, tn, 2},
               {OpName::kSgemm, DType::kF32, nn, 1},
               {OpName::kHgemm, DType::kF16, nn, 1},
               {OpName::kSgemmStridedBatched, DType::kF32, nn, 2},
               {OpName::kHgemmStridedBatched, DType::kF16, nn, 2},
               {OpName::kLtMatmul, DType::kBF16, tn, 2},
               {OpName::kGemmEx, DType::kTF32, 0, 1}};
  for (const Case& c : cases) {
    GemmKey key;
    key.api = static_cast<uint16_t>(c.api);
    key.dtype = static_cast<uint8_t>(c.dtype);
    key.gemm_ops = c.ops;
    key.m = 1024;
    key.n = 512;
    key.k = 2048;
    key.batch = c.batch;
    const ReplayResult r = runner->run(key);
    ASSERT_TRUE(r.ok) << key_label(key) << ": " << r.note;
    // 2 * 1024 * 512 * 2048 flops per batch at 1e5 flop/ns: 21474.8 ns.
    EXPECT_NEAR(r.ns_per_call, c.batch * 21474.8, 1.0) << key_label(key);
    EXPECT_EQ(r.note, c.ops == 0 ? "transposes not recorded: replayed as NN" : "");
  }
  GemmKey u8;
  u8.api = static_cast<uint16_t>(OpName::kGemmEx);
  u8.dtype = static_cast<uint8_t>(DType::kU8);
  u8.m = u8.n = u8.k = u8.batch = 1;
  EXPECT_EQ(runner->run(u8).note, "dtype uint8 is not replayed");
  u8.m = 0;
  EXPECT_EQ(runner->run(u8).note, "shape not recorded");
}

}  // namespace
}  // namespace xpu_timer::replay
