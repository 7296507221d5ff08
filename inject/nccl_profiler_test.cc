// The NCCL profiler plugin exported by libxpu_timer_inject.so, end to end:
// a process preloads the library under a fake supervisor and calls NCCL
// through the hooks; the "NCCL" is a stand-in (testdata/fake_nccl_profiling.cc)
// that loads NCCL_PROFILER_PLUGIN and drives ncclProfiler_v5 (or v4..v1) with
// the public ABI's structs exactly as NCCL does, from inside the hooked call.
// The test reads the rank's status page, as the supervisor does, and checks
// that each operation's metrics key carries the algorithm, protocol,
// transport and channels NCCL named, and "unknown" where no correlation holds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/env_names.h"
#include "common/op_names.h"
#include "common/status_page_layout.h"
#include "inject/dtype_mapping.h"
#include "inject/nccl_profiler_tags.h"
#include "inject/testdata/fake_supervisor.h"
#include "tests/harness/child_process.h"

namespace xpu_timer::inject {
namespace {

using proto::NcclAlgo;
using proto::NcclProto;
using proto::NcclTransport;
using testing::FakeSupervisor;
using xpu_timer::testing::Child;

constexpr std::chrono::seconds kTimeout{20};
constexpr double kTimeoutS = kTimeout.count();

struct DriverRun {
  std::unique_ptr<Child> child;
  std::unique_ptr<proto::StatusPage> page;
  std::string error;
};

// Runs the driver with `steps`, waits for `ops` completed operations, returns
// the page then.
DriverRun run_driver(FakeSupervisor& sup, const std::vector<std::string>& steps, uint64_t ops,
                     const std::vector<std::string>& extra_env = {}) {
  DriverRun run;
  std::vector<std::string> env = sup.env();
  env.push_back(std::string(proto::kEnvPreload) + "=" + INJECT_LIB);
  env.push_back(std::string(proto::kEnvNcclProfilerPlugin) + "=" + INJECT_LIB);
  env.push_back("XPU_TIMER_SAMPLE_PER_SEC=0");  // every call timed: exact counts per key
  for (const char* v :
       {"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=1", "LOCAL_WORLD_SIZE=1", "GROUP_RANK=0"}) {
    env.push_back(v);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> argv = {DRIVER};
  argv.insert(argv.end(), steps.begin(), steps.end());
  argv.push_back("wait");
  run.child = Child::start(argv, env);
  auto* rank = sup.accept_rank(kTimeoutS, &run.error);
  if (rank == nullptr) return run;
  if (!run.child->wait_for_output("READY", kTimeout)) {
    run.error = "driver not ready: " + run.child->output();
    return run;
  }
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(kTimeoutS * 1e9);
  while (monotonic_ns() < deadline) {
    run.page = rank->snapshot();
    if (run.page && run.page->completed_total >= ops) return run;
    usleep(10 * 1000);
  }
  run.error = "operations did not complete: " + run.child->output();
  return run;
}

const proto::MetricSlot* slot_for_bucket(const proto::StatusPage& p, int size_bucket) {
  for (uint32_t i = 0; i < p.nmetrics; ++i) {
    if (p.metrics[i].name == static_cast<uint16_t>(proto::OpName::kAllReduce) &&
        p.metrics[i].size_bucket == size_bucket) {
      return &p.metrics[i];
    }
  }
  return nullptr;
}

uint8_t u8(NcclAlgo a) { return static_cast<uint8_t>(a); }
uint8_t u8(NcclProto p) { return static_cast<uint8_t>(p); }
uint8_t u8(NcclTransport t) { return static_cast<uint8_t>(t); }

class NcclProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(INJECT_LIB, R_OK) != 0 || access(DRIVER, X_OK) != 0) {
      GTEST_SKIP() << "inject library or driver not built";
    }
    ASSERT_TRUE(sup_.ok());
  }
  FakeSupervisor sup_;
};

TEST_F(NcclProfilerTest, V5TagsEachHookedCallWithItsAlgorithmAndProtocol) {
  // Sizes pick distinct buckets: 1 MiB -> 20, 4 MiB -> 22, 8 MiB -> 23, 16 MiB -> 24.
  DriverRun run = run_driver(sup_,
                             {"ar:1048576:Ring:LL128:8", "ar:1048576:Ring:LL128:8",
                              "ar:1048576:Ring:LL128:8", "group:2097152:Tree:Simple:Tree:Simple",
                              "group:4194304:Ring:LL:Tree:LL", "async:16777216:NVLS:Simple:16"},
                             6, {"FAKE_NCCL_NNODES=1"});
  ASSERT_TRUE(run.page) << run.error;
  EXPECT_NE(run.child->output().find("mask 2"), std::string::npos)
      << "the plugin must ask for Coll events only: " << run.child->output();
  const proto::StatusPage& p = *run.page;

  const proto::MetricSlot* ring = slot_for_bucket(p, 20);
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->count, 3u);
  EXPECT_EQ(ring->algo, u8(NcclAlgo::kRing));
  EXPECT_EQ(ring->proto, u8(NcclProto::kLL128));
  EXPECT_EQ(ring->transport, u8(NcclTransport::kIntraNode));
  EXPECT_EQ(ring->nchannels, 8u);
  EXPECT_EQ(ring->nranks, 4u);

  // A group is one timed operation; its members agree.
  const proto::MetricSlot* tree = slot_for_bucket(p, 22);
  ASSERT_NE(tree, nullptr);
  EXPECT_EQ(tree->count, 1u);
  EXPECT_EQ(tree->algo, u8(NcclAlgo::kTree));
  EXPECT_EQ(tree->proto, u8(NcclProto::kSimple));

  // Members that NCCL ran with different algorithms: "mixed", same protocol kept.
  const proto::MetricSlot* mixed = slot_for_bucket(p, 23);
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(mixed->algo, u8(NcclAlgo::kMixed));
  EXPECT_EQ(mixed->proto, u8(NcclProto::kLL));

  // Events on another thread (NCCL's own thread, non-blocking communicator):
  // no correlation, the operation is still timed, labelled unknown.
  const proto::MetricSlot* async = slot_for_bucket(p, 24);
  ASSERT_NE(async, nullptr);
  EXPECT_EQ(async->count, 1u);
  EXPECT_EQ(async->algo, u8(NcclAlgo::kUnknown));
  EXPECT_EQ(async->proto, u8(NcclProto::kUnknown));

  // The communicator came from ncclCommInitRank (no config): its name is
  // what NCCL told the plugin's init inside that call.
  ASSERT_EQ(p.ncomms, 1u);
  EXPECT_STREQ(p.comms[0].name, "fake");
  run.child->close_stdin();
  EXPECT_EQ(run.child->wait_exit_code(kTimeout), 0) << run.child->output();
}

// Older NCCL releases look up older symbols with other descriptor layouts.
TEST_F(NcclProfilerTest, OlderPluginVersionsTagToo) {
  for (int version = 1; version <= 4; ++version) {
    FakeSupervisor sup;
    DriverRun run =
        run_driver(sup, {"ar:1048576:PAT:Simple:2"}, 1,
                   {"FAKE_NCCL_PROFILER_VERSION=" + std::to_string(version), "FAKE_NCCL_NNODES=3"});
    ASSERT_TRUE(run.page) << "v" << version << ": " << run.error;
    const proto::MetricSlot* s = slot_for_bucket(*run.page, 20);
    ASSERT_NE(s, nullptr) << "v" << version;
    EXPECT_EQ(s->algo, u8(NcclAlgo::kPat)) << "v" << version;
    EXPECT_EQ(s->proto, u8(NcclProto::kSimple)) << "v" << version;
    EXPECT_EQ(s->nchannels, 2u) << "v" << version;
    // Only v4 and v5 tell the node count.
    EXPECT_EQ(s->transport, u8(version == 4 ? NcclTransport::kInterNode : NcclTransport::kUnknown))
        << "v" << version;
    // Only v4 and v5 tell the communicator's name.
    ASSERT_EQ(run.page->ncomms, 1u) << "v" << version;
    EXPECT_STREQ(run.page->comms[0].name, version == 4 ? "fake" : "") << "v" << version;
    run.child->close_stdin();
    EXPECT_EQ(run.child->wait_exit_code(kTimeout), 0) << run.child->output();
  }
}

// XPU_TIMER_DISABLE=1: the plugin asks NCCL for no events at all.
TEST_F(NcclProfilerTest, DisabledProcessAsksForNoEvents) {
  std::vector<std::string> env = {std::string(proto::kEnvPreload) + "=" + INJECT_LIB,
                                  std::string(proto::kEnvNcclProfilerPlugin) + "=" + INJECT_LIB,
                                  std::string(proto::kEnvDisable) + "=1"};
  Child child({DRIVER, "ar:1048576:Ring:LL:1"}, env);
  EXPECT_EQ(child.wait_exit_code(kTimeout), 0) << child.output();
  EXPECT_NE(child.output().find("mask 0"), std::string::npos) << child.output();
}

// The benchmark's KernelCh probe: switched on, the plugin asks NCCL v5 for
// KernelCh events too, gives Coll events a handle so that NCCL reports their
// kernel channels, and keeps each channel's start and stop timestamps;
// switched off, the mask is Coll alone again.
TEST_F(NcclProfilerTest, KernelChProbeKeepsEachChannelsStartAndStop) {
  const std::string dump = ::testing::TempDir() + "kernel_ch_probe_" + std::to_string(getpid());
  DriverRun run = run_driver(sup_,
                             {"kernel_ch:on", "ar:1048576:Ring:LL128:3", "kernel_ch:off",
                              "ar:1048576:Ring:LL128:3", "kernel_ch_dump:" + dump},
                             2);
  ASSERT_TRUE(run.page) << run.error;
  const std::string out = run.child->output();
  EXPECT_NE(out.find("kernel_ch 0 mask 66"), std::string::npos) << out;  // Coll | KernelCh
  EXPECT_NE(out.find("kernel_ch 0 mask 2"), std::string::npos) << out;
  EXPECT_NE(out.find("dumped 6"), std::string::npos) << out;  // the second call added none
  const std::string text = xpu_timer::testing::read_file(dump);
  ASSERT_FALSE(text.empty()) << dump;
  std::vector<std::string> kinds;
  for (size_t pos = 0; pos < text.size();) {
    const size_t nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl - pos);
    char kind[8] = {};
    unsigned channel = 0;
    unsigned long long gpu = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%7s %u %llu", kind, &channel, &gpu), 3) << line;
    EXPECT_EQ(gpu, (std::string(kind) == "start" ? 1000u : 2000u) + channel) << line;
    kinds.push_back(std::string(kind) + std::to_string(channel));
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"start0", "stop0", "start1", "stop1", "start2", "stop2"}));
  // The operations are timed as ever, tagged from the Coll event.
  const proto::MetricSlot* ring = slot_for_bucket(*run.page, 20);
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->count, 2u);
  EXPECT_EQ(ring->algo, u8(NcclAlgo::kRing));
  unlink(dump.c_str());
  run.child->close_stdin();
  EXPECT_EQ(run.child->wait_exit_code(kTimeout), 0) << out;
}

TEST(NcclProfilerNames, MapNcclNamesAndEnums) {
  EXPECT_EQ(nccl_algo_from_name("Ring"), u8(NcclAlgo::kRing));
  EXPECT_EQ(nccl_algo_from_name("NVLSTree"), u8(NcclAlgo::kNvlsTree));
  EXPECT_EQ(nccl_algo_from_name("CollNetChain"), u8(NcclAlgo::kCollNetChain));
  // ncclAlgoToString / ncclProtoToString spellings (NCCL 2.28).
  EXPECT_EQ(nccl_algo_from_name("RING"), u8(NcclAlgo::kRing));
  EXPECT_EQ(nccl_algo_from_name("NVLS_TREE"), u8(NcclAlgo::kNvlsTree));
  EXPECT_EQ(nccl_algo_from_name("COLLNET_DIRECT"), u8(NcclAlgo::kCollNetDirect));
  EXPECT_EQ(nccl_proto_from_name("SIMPLE"), u8(NcclProto::kSimple));
  EXPECT_EQ(nccl_algo_from_name("RINGX"), u8(NcclAlgo::kOther));
  EXPECT_EQ(nccl_algo_from_name("AGxLL_R"), u8(NcclAlgo::kOther));  // symmetric kernels
  EXPECT_EQ(nccl_algo_from_name(nullptr), u8(NcclAlgo::kUnknown));
  EXPECT_EQ(nccl_proto_from_name("LL128"), u8(NcclProto::kLL128));
  EXPECT_EQ(nccl_proto_from_name(""), u8(NcclProto::kUnknown));
  EXPECT_EQ(nccl_algo_from_v1(1), u8(NcclAlgo::kRing));
  EXPECT_EQ(nccl_algo_from_v1(6), u8(NcclAlgo::kPat));
  EXPECT_EQ(nccl_proto_from_v1(2), u8(NcclProto::kSimple));
  EXPECT_STREQ(proto::nccl_algo_str(u8(NcclAlgo::kMixed)), "mixed");
  EXPECT_STREQ(proto::nccl_algo_str(200), "unknown");
}

}  // namespace
}  // namespace xpu_timer::inject
