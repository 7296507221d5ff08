// Integration tests of libxpu_timer_inject.so against the simulated GPU: real
// processes (sim_trainer, inject_sim_driver, xpu_timer_sim_launch) run with
// LD_PRELOAD under a test-local fake supervisor; the tests read the status
// pages exactly as the supervisor does. Every wait is bounded; readiness is a
// "READY" line from the driver, never a sleep.
#include <gtest/gtest.h>
#include <nccl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/env_names.h"
#include "common/op_names.h"
#include "common/recorder_ring.h"
#include "common/status_page_layout.h"
#include "inject/comm_hash.h"
#include "inject/dtype_mapping.h"
#include "inject/testdata/fake_supervisor.h"
#include "tests/harness/child_process.h"
#include "tests/simgpu/sim_segments.h"

namespace xpu_timer::inject {
namespace {

using proto::DType;
using proto::OpName;
using testing::FakeSupervisor;
using testing::find_metric;
using testing::RegisteredRank;
using xpu_timer::testing::Child;

constexpr std::chrono::seconds kTimeout{30};
constexpr double kTimeoutS = kTimeout.count();

// The comm_hash every rank must report for the sim's main communicator:
// the sim derives its ncclUniqueId from the job id (sim_make_unique_id).
uint64_t expected_main_comm_hash(const std::string& job) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::snprintf(id.internal, sizeof(id.internal), "xpu-timer-sim-job:%s", job.c_str());
  return comm_hash_from_unique_ids(&id, 1, sizeof(id));
}

const proto::CommSlot* find_comm(const proto::StatusPage& p, uint64_t hash) {
  for (uint32_t i = 0; i < p.ncomms; ++i) {
    if (p.comms[i].comm_hash == hash) return &p.comms[i];
  }
  return nullptr;
}

uint64_t hist_total(const proto::MetricSlot& s) {
  uint64_t n = 0;
  for (uint64_t h : s.hist) n += h;
  return n;
}

class InjectSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(INJECT_LIB, R_OK) != 0 || access(SIM_LIB_DIR "/libsim_workload.so", R_OK) != 0) {
      GTEST_SKIP() << "inject library or simulated GPU not built";
    }
    ASSERT_TRUE(sup_.ok()) << "cannot listen on a unix socket in /tmp";
    job_ = simgpu::testing::unique_job_id();
  }

  // A killed job leaves the sim's rendezvous segments behind.
  void TearDown() override {
    if (!job_.empty()) simgpu::testing::remove_segments(job_);
  }

  // Environment of a watched rank; `rank_env` adds RANK & co for runs
  // without the launcher.
  std::vector<std::string> env(bool rank_env = true) const {
    std::vector<std::string> e = sup_.env();
    e.push_back(std::string(proto::kEnvPreload) + "=" + INJECT_LIB);
    e.push_back(std::string("XPU_TIMER_SIM_LIB_DIR=") + SIM_LIB_DIR);
    e.push_back("XPU_TIMER_SIM_JOB_ID=" + job_);
    // These tests check the timing of every call; sampling has its own test.
    e.push_back("XPU_TIMER_SAMPLE_PER_SEC=" + sample_rate_);
    if (rank_env) {
      for (const char* v :
           {"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=1", "LOCAL_WORLD_SIZE=1", "GROUP_RANK=0"}) {
        e.push_back(v);
      }
    }
    return e;
  }

  std::vector<RegisteredRank*> accept_ranks(int n) {
    std::vector<RegisteredRank*> out;
    for (int i = 0; i < n; ++i) {
      std::string error;
      RegisteredRank* r = sup_.accept_rank(kTimeoutS, &error);
      EXPECT_NE(r, nullptr) << error;
      if (r == nullptr) return {};
      out.push_back(r);
    }
    // Launch order is not registration order: sort by rank.
    std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->msg.rank < b->msg.rank; });
    return out;
  }

  // Polls the page until `done(page)` holds; bounded.
  std::unique_ptr<proto::StatusPage> wait_page(
      const RegisteredRank& r, const std::function<bool(const proto::StatusPage&)>& done) {
    const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(kTimeoutS * 1e9);
    for (;;) {
      auto snap = r.snapshot();
      if (snap != nullptr && done(*snap)) return snap;
      if (monotonic_ns() > deadline) return snap;
      usleep(2000);
    }
  }

  FakeSupervisor sup_;
  std::string job_;
  std::string sample_rate_ = "0";
};

TEST_F(InjectSimTest, TrainerStepsAreCountedExactlyOnEveryRank) {
  constexpr int kSteps = 5, kGemms = 4;
  auto job = Child::start(
      {SIM_LAUNCH, "--nproc", "2", "--", SIM_TRAINER, "--steps", std::to_string(kSteps),
       "--gemms-per-step", std::to_string(kGemms), "--gemm", "256,512,1024", "--gemm-api", "gemmex",
       "--collective", "allreduce", "--bytes", "1048576"},
      env(/*rank_env=*/false));
  ASSERT_NE(job, nullptr);
  auto ranks = accept_ranks(2);
  ASSERT_EQ(ranks.size(), 2u) << job->output();
  ASSERT_EQ(job->wait_exit_code(kTimeout), 0) << job->output();

  const uint64_t gemm_flops_each = 2ull * 256 * 512 * 1024;
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    // The mapping outlives the process and its unlinked file: this is the
    // page as the exit handler's last pass left it.
    auto p = ranks[r]->snapshot();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->rank, r);
    EXPECT_EQ(p->world_size, 2);
    EXPECT_EQ(p->pid, ranks[r]->msg.pid);
    EXPECT_EQ(p->issued_total, static_cast<uint64_t>(kSteps * (kGemms + 1)));
    EXPECT_EQ(p->completed_total, p->issued_total);
    EXPECT_EQ(p->inflight_count, 0u);
    EXPECT_EQ(p->dropped_queue_full, 0u);
    EXPECT_EQ(p->hook_errors, 0u);
    EXPECT_EQ(p->skipped_capture, 0u);
    EXPECT_GE(p->heartbeat_ns.load(), p->created_mono_ns);

    const proto::MetricSlot* gemm = find_metric(*p, OpName::kGemmEx, DType::kBF16);
    ASSERT_NE(gemm, nullptr);
    EXPECT_EQ(gemm->count, static_cast<uint64_t>(kSteps * kGemms));
    EXPECT_EQ(gemm->sum_flops, kSteps * kGemms * gemm_flops_each);
    EXPECT_EQ(gemm->size_bucket, log2_bucket(gemm_flops_each));
    EXPECT_EQ(gemm->nranks, 0u);
    EXPECT_EQ(hist_total(*gemm), gemm->count);
    EXPECT_GT(gemm->sum_ns, 0u);

    const proto::MetricSlot* ar = find_metric(*p, OpName::kAllReduce, DType::kBF16);
    ASSERT_NE(ar, nullptr);
    EXPECT_EQ(ar->count, static_cast<uint64_t>(kSteps));
    EXPECT_EQ(ar->sum_bytes, kSteps * 1048576ull);
    EXPECT_EQ(ar->size_bucket, 20);
    EXPECT_EQ(ar->nranks, 2u);
    EXPECT_EQ(hist_total(*ar), ar->count);
    // 20 us latency + 1 MiB at 50 GB/s: at least the simulated latency.
    EXPECT_GE(ar->sum_ns, kSteps * 20000ull);
    EXPECT_EQ(p->nmetrics, 2u);
  }
  EXPECT_TRUE(sup_.page_files().empty()) << "page files are unlinked at exit";
}

// With sampling, each (op, shape) is timed about once per interval; every
// other GEMM is only counted and every collective still completes on the page.
TEST_F(InjectSimTest, SampledOutCallsAreCountedAndCollectivesStillComplete) {
  sample_rate_ = "1";  // one timing per second and shape: the job lasts far less
  constexpr int kSteps = 20, kGemms = 4;
  auto job = Child::start(
      {SIM_LAUNCH, "--nproc", "2", "--", SIM_TRAINER, "--steps", std::to_string(kSteps),
       "--gemms-per-step", std::to_string(kGemms), "--gemm", "256,512,1024", "--gemm-api", "gemmex",
       "--collective", "allreduce", "--bytes", "1048576"},
      env(/*rank_env=*/false));
  ASSERT_NE(job, nullptr);
  auto ranks = accept_ranks(2);
  ASSERT_EQ(ranks.size(), 2u) << job->output();
  ASSERT_EQ(job->wait_exit_code(kTimeout), 0) << job->output();
  const uint64_t gemm_flops_each = 2ull * 256 * 512 * 1024;
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    auto p = ranks[r]->snapshot();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->issued_total, static_cast<uint64_t>(kSteps * (kGemms + 1)));
    EXPECT_EQ(p->completed_total, p->issued_total);
    EXPECT_EQ(p->inflight_count, 0u);
    const proto::MetricSlot* gemm = find_metric(*p, OpName::kGemmEx, DType::kBF16);
    ASSERT_NE(gemm, nullptr);
    EXPECT_GE(gemm->count, 1u);
    EXPECT_LE(gemm->count, 3u) << "timed far more often than once a second";
    EXPECT_EQ(gemm->count + gemm->untimed_count, static_cast<uint64_t>(kSteps * kGemms));
    EXPECT_EQ(gemm->sum_flops, gemm->count * gemm_flops_each);
    EXPECT_EQ(gemm->untimed_flops, gemm->untimed_count * gemm_flops_each);
    EXPECT_EQ(hist_total(*gemm), gemm->count);
    const proto::MetricSlot* ar = find_metric(*p, OpName::kAllReduce, DType::kBF16);
    ASSERT_NE(ar, nullptr);
    EXPECT_GE(ar->count, 1u);
    EXPECT_EQ(ar->count + ar->untimed_count, static_cast<uint64_t>(kSteps));
    EXPECT_EQ(ar->untimed_bytes, ar->untimed_count * 1048576ull);
    EXPECT_EQ(hist_total(*ar), ar->count);
  }
}

// What the supervisor's hang detection reads: rank 1 never enters step 2's
// AllReduce; rank 0's is launched, started on the GPU and never completes.
TEST_F(InjectSimTest, HungCollectiveIsTheOldestInflightOpWithItsCommAndSeq) {
  auto job = Child::start({SIM_LAUNCH, "--nproc", "2", "--", SIM_TRAINER, "--steps", "5",
                           "--gemms-per-step", "2", "--gemm", "64,64,64", "--collective",
                           "allreduce", "--bytes", "4096", "--hang-rank", "1", "--hang-step", "2"},
                          env(/*rank_env=*/false));
  ASSERT_NE(job, nullptr);
  auto ranks = accept_ranks(2);
  ASSERT_EQ(ranks.size(), 2u) << job->output();
  ASSERT_TRUE(job->wait_for_output("stuck_in_host_code", kTimeout)) << job->output();
  const uint64_t main_hash = expected_main_comm_hash(job_);

  auto stuck = wait_page(*ranks[0], [](const proto::StatusPage& s) {
    // Earlier AllReduces are briefly in flight too (waiting for rank 1): wait
    // for the one that stays.
    return s.inflight_count == 1 && s.oldest_inflight.seq == 3 &&
           s.oldest_inflight.started_ns != 0 && s.completed_total == 3u * 2 + 2;
  });
  ASSERT_NE(stuck, nullptr);
  EXPECT_EQ(stuck->inflight_count, 1u);
  EXPECT_EQ(stuck->oldest_inflight.name, static_cast<uint16_t>(OpName::kAllReduce));
  EXPECT_EQ(stuck->oldest_inflight.kind, static_cast<uint8_t>(proto::OpKind::kNccl));
  EXPECT_EQ(stuck->oldest_inflight.comm_hash, main_hash);
  EXPECT_EQ(stuck->oldest_inflight.seq, 3u);
  EXPECT_EQ(stuck->oldest_inflight.bytes, 4096u);
  EXPECT_GE(stuck->oldest_inflight.started_ns, stuck->oldest_inflight.launch_ns);
  EXPECT_EQ(stuck->completed_total, 3u * 2 + 2);  // steps 0-1 and step 2's GEMMs
  const proto::CommSlot* c0 = find_comm(*stuck, main_hash);
  ASSERT_NE(c0, nullptr);
  EXPECT_EQ(c0->issued_seq, 3u);
  EXPECT_EQ(c0->completed_seq, 2u);

  auto missing = wait_page(
      *ranks[1], [](const proto::StatusPage& s) { return s.completed_total == 3u * 2 + 2; });
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->inflight_count, 0u);
  const proto::CommSlot* c1 = find_comm(*missing, main_hash);
  ASSERT_NE(c1, nullptr);
  EXPECT_EQ(c1->issued_seq, 2u);
  EXPECT_EQ(c1->completed_seq, 2u);

  // Both ranks stay alive and keep their heartbeats going while hung.
  const uint64_t hb0 = ranks[0]->heartbeat_ns();
  const uint64_t hb1 = ranks[1]->heartbeat_ns();
  EXPECT_NE(
      wait_page(*ranks[0], [&](const proto::StatusPage& s) { return s.heartbeat_ns.load() > hb0; })
          ->heartbeat_ns.load(),
      hb0);
  EXPECT_NE(
      wait_page(*ranks[1], [&](const proto::StatusPage& s) { return s.heartbeat_ns.load() > hb1; })
          ->heartbeat_ns.load(),
      hb1);
  // The job is killed by ~Child (SIGKILL to its process group).
}

// The hang clock's origin (docs/architecture.md "Hang detection"): a
// sampled-out collective records a start marker too, so started_ns is known
// for every collective; while its stream waits for queued GEMMs (the comm
// stream waits for the compute stream) it stays 0, and the page shows the
// collective launched long ago and not started.
TEST_F(InjectSimTest, SampledOutCollectiveStartsItsClockWhenTheWorkBeforeItFinishes) {
  sample_rate_ = "0.01";       // each shape timed once per 100 s: the first call only
  constexpr int kGemms = 100;  // 8192^3 bf16 at 100 TFLOP/s: 11 ms each, 1.1 s per step
  std::vector<std::string> e = env(/*rank_env=*/false);
  e.push_back("XPU_TIMER_SIM_TFLOPS=100");
  auto job = Child::start(
      {SIM_LAUNCH, "--nproc", "2", "--", SIM_TRAINER, "--steps", "5", "--gemms-per-step",
       std::to_string(kGemms), "--gemm", "8192,8192,8192", "--collective", "allreduce", "--bytes",
       "4096", "--hang-rank", "1", "--hang-step", "2"},
      e);
  ASSERT_NE(job, nullptr);
  auto ranks = accept_ranks(2);
  ASSERT_EQ(ranks.size(), 2u) << job->output();

  // Step 2's AllReduce (#3) of rank 0, queued behind 1.1 s of GEMMs.
  auto queued = wait_page(*ranks[0], [](const proto::StatusPage& s) {
    return s.inflight_count >= 1 && s.oldest_inflight.seq == 3 &&
           s.oldest_inflight.name == static_cast<uint16_t>(OpName::kAllReduce);
  });
  ASSERT_NE(queued, nullptr);
  ASSERT_EQ(queued->oldest_inflight.seq, 3u) << job->output();
  EXPECT_EQ(queued->oldest_inflight.started_ns, 0u) << "started before its GEMMs finished";

  // Then it runs (and waits for rank 1 for ever): its clock starts ~1.1 s
  // after its launch, not at it (half of that allows for a slow host).
  auto running = wait_page(*ranks[0], [](const proto::StatusPage& s) {
    return s.oldest_inflight.seq == 3 && s.oldest_inflight.started_ns != 0;
  });
  ASSERT_NE(running, nullptr);
  ASSERT_NE(running->oldest_inflight.started_ns, 0u) << "a sampled-out collective never started";
  EXPECT_GE(running->oldest_inflight.started_ns - running->oldest_inflight.launch_ns,
            static_cast<uint64_t>(kGemms * 5'000'000ull))
      << "started before the GEMMs before it could have finished";
  // #1 was timed, #2 completed sampled out, #3 is sampled out too.
  const proto::MetricSlot* ar = find_metric(*running, OpName::kAllReduce, DType::kBF16);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->count, 1u);
  EXPECT_EQ(ar->untimed_count, 1u);
  EXPECT_EQ(running->hook_errors, 0u);
  // The job is killed by ~Child (SIGKILL to its process group).
}

TEST_F(InjectSimTest, GroupsSendRecvAndSplitAdvanceEachCommunicatorsSeq) {
  // Named communicators (ncclConfig_t::commName): the names reach the page.
  auto job = Child::start({SIM_LAUNCH, "--nproc", "2", "--", SIM_DRIVER, "name:tp_group", "init",
                           "gemm:gemmex:64:64:64:1", "coll:allreduce:4096", "group:3:4096",
                           "ring:1024", "split:1:4096", "sync", "wait", "finalize"},
                          env(/*rank_env=*/false));
  ASSERT_NE(job, nullptr);
  auto ranks = accept_ranks(2);
  ASSERT_EQ(ranks.size(), 2u) << job->output();
  const uint64_t main_hash = expected_main_comm_hash(job_);
  const uint64_t split_hash = comm_hash_for_split(main_hash, /*color=*/0, /*nth_split=*/0);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    auto p = wait_page(*ranks[r], [](const proto::StatusPage& s) {
      return s.completed_total >= 5 && s.ncomms >= 2;
    });
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->issued_total, 5u);  // GEMM, AllReduce, group, ring group, split AllReduce
    EXPECT_EQ(p->completed_total, 5u);
    EXPECT_EQ(p->inflight_count, 0u);
    ASSERT_EQ(p->ncomms, 2u);
    const proto::CommSlot* main_comm = find_comm(*p, main_hash);
    ASSERT_NE(main_comm, nullptr) << "main comm hash differs from hash(ncclUniqueId)";
    EXPECT_EQ(main_comm->nranks, 2);
    EXPECT_EQ(main_comm->rank, r);
    EXPECT_EQ(main_comm->issued_seq, 6u);  // 1 + 3 group members + send + recv
    EXPECT_EQ(main_comm->completed_seq, 6u);
    EXPECT_STREQ(main_comm->name, "tp_group");
    const proto::CommSlot* split_comm = find_comm(*p, split_hash);
    ASSERT_NE(split_comm, nullptr) << "split comm hash";
    EXPECT_STREQ(split_comm->name, "tp_group_split");
    EXPECT_EQ(split_comm->nranks, 2);
    EXPECT_EQ(split_comm->issued_seq, 1u);
    EXPECT_EQ(split_comm->completed_seq, 1u);

    // AllReduce of 4096 bytes: the single one and the split one share a key.
    const proto::MetricSlot* ar = find_metric(*p, OpName::kAllReduce, DType::kBF16, 12);
    ASSERT_NE(ar, nullptr);
    EXPECT_EQ(ar->count, 2u);
    EXPECT_EQ(ar->nranks, 2u);
    // Three AllReduces in one group: one operation named AllReduce, 3x bytes.
    const proto::MetricSlot* grouped = find_metric(*p, OpName::kAllReduce, DType::kBF16, 13);
    ASSERT_NE(grouped, nullptr);
    EXPECT_EQ(grouped->count, 1u);
    EXPECT_EQ(grouped->sum_bytes, 3 * 4096u);
    // Send + Recv in one group: mixed ops -> Group, 2 x 1024 int8 bytes.
    const proto::MetricSlot* ring = find_metric(*p, OpName::kGroup, DType::kI8);
    ASSERT_NE(ring, nullptr);
    EXPECT_EQ(ring->count, 1u);
    EXPECT_EQ(ring->sum_bytes, 2048u);
    EXPECT_EQ(p->hook_errors, 0u);
  }
  job->close_stdin();
  ASSERT_EQ(job->wait_exit_code(kTimeout), 0) << job->output();
  EXPECT_TRUE(sup_.page_files().empty());
}

// The user's own runtime calls (inject/hooks_cudart.cc), with no cuBLAS or
// NCCL at all: kernel launches and device allocations are counted exactly,
// copies are operations named by their direction (cudaMemcpyDefault asks the
// runtime which side is device memory), with their bytes.
TEST_F(InjectSimTest, RuntimeCallsAreCountedAndCopiesNamedByDirection) {
  constexpr uint64_t kBig = 1 << 20;
  auto job = Child::start(
      {SIM_DRIVER, "malloc:1048576", "malloc:4096", "free", "mallocasync:2048", "freeasync",
       "launch:400", "launch:350:1", "launch:250:2", "copy:h2d:65536", "copy:d2h:4096:sync",
       "copy:d2d:8192", "copy:h2h:512", "copy:default-h2d:16384", "copy:default-d2h:32768:sync",
       "copy:peer:131072", "copy:peer:2048:sync", "devsync", "wait"},
      env());
  ASSERT_NE(job, nullptr);
  auto ranks = accept_ranks(1);
  ASSERT_EQ(ranks.size(), 1u) << job->output();
  ASSERT_TRUE(job->wait_for_output("READY", kTimeout)) << job->output();
  auto p = wait_page(*ranks[0], [](const proto::StatusPage& s) {
    return s.completed_total >= 8 && s.runtime.kernel_launches >= 1000;
  });
  ASSERT_NE(p, nullptr) << job->output();
  EXPECT_EQ(p->runtime.kernel_launches, 1000u);
  EXPECT_EQ(p->runtime.mallocs, 3u);
  EXPECT_EQ(p->runtime.malloc_bytes, kBig + 4096 + 2048);
  EXPECT_EQ(p->runtime.frees, 2u);
  EXPECT_EQ(p->runtime.free_bytes, 4096u + 2048);
  EXPECT_EQ(p->issued_total, 8u);
  EXPECT_EQ(p->completed_total, 8u);
  struct Want {
    OpName name;
    uint64_t bytes;
  };
  const Want wants[] = {
      {OpName::kMemcpyH2D, 65536},   {OpName::kMemcpyD2H, 4096},  {OpName::kMemcpyD2D, 8192},
      {OpName::kMemcpyOther, 512},   {OpName::kMemcpyH2D, 16384}, {OpName::kMemcpyD2H, 32768},
      {OpName::kMemcpyPeer, 131072}, {OpName::kMemcpyPeer, 2048},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(std::string(proto::op_name_str(w.name)) + " " + std::to_string(w.bytes));
    const proto::MetricSlot* m = find_metric(*p, w.name, DType::kU8, log2_bucket(w.bytes));
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->count + m->untimed_count, 1u);
    EXPECT_EQ(m->sum_bytes + m->untimed_bytes, w.bytes);
    EXPECT_EQ(m->sum_flops + m->untimed_flops, 0u);
  }
  EXPECT_EQ(p->nmetrics, 8u);
  EXPECT_EQ(p->hook_errors, 0u);

  // The flight recorder: the synchronous allocations and frees as events
  // (the stream-ordered ones only counted), the launches as samples whose
  // counts add up to every launch once the Poller sampled the last ones
  // (at most one sampling interval after them).
  std::string error;
  auto ring = recorder::RingReader::attach(recorder::ring_path(sup_.dir(), 0, job->pid()),
                                           job->pid(), 0, &error);
  ASSERT_NE(ring, nullptr) << error;
  recorder::RingSnapshot snap;
  uint64_t launched = 0;
  ASSERT_TRUE(xpu_timer::testing::wait_until(
      [&] {
        launched = 0;
        if (!ring->read(&snap, &error)) return false;
        for (const recorder::RecordData& d : snap.records) {
          if (d.name == static_cast<uint16_t>(OpName::kKernelLaunches)) launched += d.count;
        }
        return launched >= 1000;
      },
      std::chrono::seconds(static_cast<int>(kTimeoutS))))
      << error;
  EXPECT_EQ(launched, 1000u);
  std::vector<std::pair<uint16_t, uint64_t>> allocs;  // (name, bytes)
  for (const recorder::RecordData& d : snap.records) {
    if (d.name == static_cast<uint16_t>(OpName::kDeviceMalloc) ||
        d.name == static_cast<uint16_t>(OpName::kDeviceFree)) {
      EXPECT_EQ(d.kind, static_cast<uint8_t>(proto::OpKind::kRange));
      EXPECT_LE(d.host_start_ns, d.host_end_ns);
      allocs.emplace_back(d.name, d.bytes);
    }
  }
  const std::vector<std::pair<uint16_t, uint64_t>> want_allocs = {
      {static_cast<uint16_t>(OpName::kDeviceMalloc), kBig},
      {static_cast<uint16_t>(OpName::kDeviceMalloc), 4096},
      {static_cast<uint16_t>(OpName::kDeviceFree), 4096}};
  EXPECT_EQ(allocs, want_allocs);
  job->close_stdin();
  EXPECT_EQ(job->wait_exit_code(kTimeout), 0) << job->output();
}

// A host waiting for its GPU is time it blocked, in the launch samples
// (inject/host_blocked.h): a synchronisation behind GEMMs of 350 ms
// (simulated at 100 TFLOP/s), and a synchronous copy to the host of 4 MiB at
// 0.01 GB/s (420 ms). The hooks time the calls inside the driver's own timing
// of the step, and every blocking call of the driver's lies within its run
// so far.
TEST_F(InjectSimTest, ASynchronisationOrACopyToTheHostIsTimeTheHostBlockedOnItsGpu) {
  const std::vector<std::vector<std::string>> runs = {
      {SIM_DRIVER, "init", "gemm:gemmex:16384:16384:16384:1*4", "timedsync", "wait"},
      {SIM_DRIVER, "malloc:4194304", "timedcopy:4194304", "wait"}};
  for (const auto& argv : runs) {
    SCOPED_TRACE(argv[argv.size() - 2]);
    std::vector<std::string> e = env();
    e.push_back("XPU_TIMER_SIM_TFLOPS=100");
    e.push_back("XPU_TIMER_SIM_COPY_GBPS=0.01");
    auto job = Child::start(argv, e);
    ASSERT_NE(job, nullptr);
    auto ranks = accept_ranks(1);
    ASSERT_EQ(ranks.size(), 1u) << job->output();
    ASSERT_TRUE(job->wait_for_output("READY", kTimeout)) << job->output();
    unsigned long long sync_ns = 0, run_ns = 0;
    const std::string out = job->output();
    const size_t at = out.find("SYNCED ");
    ASSERT_NE(at, std::string::npos) << out;
    ASSERT_EQ(std::sscanf(out.c_str() + at, "SYNCED %llu %llu", &sync_ns, &run_ns), 2) << out;
    ASSERT_GT(sync_ns, 300'000'000ull) << "the simulated 350 or 420 ms";
    std::string error;
    auto ring = recorder::RingReader::attach(recorder::ring_path(sup_.dir(), 0, job->pid()),
                                             job->pid(), 0, &error);
    ASSERT_NE(ring, nullptr) << error;
    recorder::RingSnapshot snap;
    uint64_t blocked = 0;
    // The sim's sync waits on two streams: the first holds the GEMMs' wait.
    ASSERT_TRUE(xpu_timer::testing::wait_until(
        [&] {
          blocked = 0;
          if (!ring->read(&snap, &error)) return false;
          for (const recorder::RecordData& d : snap.records) {
            if (d.name == static_cast<uint16_t>(OpName::kKernelLaunches)) {
              EXPECT_NE(d.flags & recorder::kRecMeasured, 0) << "a sample without the measure";
              blocked += d.bytes;
            }
          }
          return blocked >= sync_ns / 2;
        },
        std::chrono::seconds(static_cast<int>(kTimeoutS))))
        << error << " blocked " << blocked << " of " << sync_ns;
    EXPECT_LE(blocked, run_ns);
    // The page's counter (xpu_timer_host_blocked_seconds_total) holds the same.
    auto p = wait_page(*ranks[0], [&](const proto::StatusPage& page) {
      return page.runtime.host_blocked_ns >= sync_ns / 2;
    });
    ASSERT_NE(p, nullptr) << job->output();
    EXPECT_LE(p->runtime.host_blocked_ns, run_ns);
    job->close_stdin();
    EXPECT_EQ(job->wait_exit_code(kTimeout), 0) << job->output();
    ranks.clear();
  }
}

TEST_F(InjectSimTest, EveryGemmEntryPointIsTimedWithItsShapeAndCaptureIsSkipped) {
  auto job = Child::start(
      {SIM_DRIVER, "init", "gemm:gemmex:64:128:256:1", "gemm:stridedbatchedex:64:128:256:3",
       "gemm:sgemm:32:32:32:1", "gemm:hgemm:16:16:16:1", "gemm:sgemmstridedbatched:8:8:8:2",
       "gemm:hgemmstridedbatched:8:8:8:5", "gemm:ltmatmul:64:32:16:2", "capture:64:64:64", "sync",
       "wait", "finalize"},
      env());
  ASSERT_NE(job, nullptr);
  auto ranks = accept_ranks(1);
  ASSERT_EQ(ranks.size(), 1u) << job->output();
  ASSERT_TRUE(job->wait_for_output("READY", kTimeout)) << job->output();
  auto p = wait_page(*ranks[0], [](const proto::StatusPage& s) {
    return s.completed_total >= 7 && s.skipped_capture >= 1;
  });
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->issued_total, 7u);
  EXPECT_EQ(p->completed_total, 7u);
  EXPECT_EQ(p->skipped_capture, 1u);
  struct Want {
    OpName name;
    DType dtype;
    uint64_t flops;
  };
  const Want wants[] = {
      {OpName::kGemmEx, DType::kBF16, 2ull * 64 * 128 * 256},
      {OpName::kGemmStridedBatchedEx, DType::kBF16, 3 * 2ull * 64 * 128 * 256},
      {OpName::kSgemm, DType::kF32, 2ull * 32 * 32 * 32},
      {OpName::kHgemm, DType::kF16, 2ull * 16 * 16 * 16},
      {OpName::kSgemmStridedBatched, DType::kF32, 2 * 2ull * 8 * 8 * 8},
      {OpName::kHgemmStridedBatched, DType::kF16, 5 * 2ull * 8 * 8 * 8},
      {OpName::kLtMatmul, DType::kBF16, 2 * 2ull * 64 * 32 * 16},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(proto::op_name_str(w.name));
    const proto::MetricSlot* m = find_metric(*p, w.name, w.dtype);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->count, 1u);  // the captured GemmEx is not among them
    EXPECT_EQ(m->sum_flops, w.flops);
    EXPECT_EQ(m->size_bucket, log2_bucket(w.flops));
    EXPECT_EQ(m->sum_bytes, 0u);
  }
  EXPECT_EQ(p->nmetrics, 7u);
  job->close_stdin();
  EXPECT_EQ(job->wait_exit_code(kTimeout), 0) << job->output();
}

TEST_F(InjectSimTest, HooksReachLibrariesThatAreNotInTheGlobalScope) {
  auto job = Child::start({SIM_DRIVER, "init", "gemm:gemmex:64:64:64:1", "coll:allreduce:4096",
                           "sync", "scope", "wait", "finalize"},
                          env());
  ASSERT_NE(job, nullptr);
  auto ranks = accept_ranks(1);
  ASSERT_EQ(ranks.size(), 1u) << job->output();
  ASSERT_TRUE(job->wait_for_output("READY", kTimeout)) << job->output();
  // Neither library is in the global scope, so dlsym(RTLD_NEXT) from the
  // preloaded library (which searches a subset of it) finds nothing there...
  EXPECT_NE(job->output().find("global ncclCommCount absent, global cublasCreate_v2 absent"),
            std::string::npos)
      << job->output();
  // ...and still both calls went through the hooks to the real functions.
  auto p = wait_page(*ranks[0], [](const proto::StatusPage& s) { return s.completed_total >= 2; });
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->completed_total, 2u);
  EXPECT_NE(find_metric(*p, OpName::kGemmEx, DType::kBF16), nullptr);
  EXPECT_NE(find_metric(*p, OpName::kAllReduce, DType::kBF16), nullptr);
  job->close_stdin();
  EXPECT_EQ(job->wait_exit_code(kTimeout), 0) << job->output();
}

TEST_F(InjectSimTest, ForkedChildLeavesTheParentsPageAndConnectionAlone) {
  auto job = Child::start(
      {SIM_DRIVER, "init", "gemm:gemmex:64:64:64:1", "sync", "fork", "wait", "finalize"}, env());
  ASSERT_NE(job, nullptr);
  auto ranks = accept_ranks(1);
  ASSERT_EQ(ranks.size(), 1u) << job->output();
  ASSERT_TRUE(job->wait_for_output("READY", kTimeout)) << job->output();
  EXPECT_NE(job->output().find("child exited 0"), std::string::npos) << job->output();
  EXPECT_EQ(sup_.page_files().size(), 1u) << "the child's exit handler must not unlink it";
  pollfd p{ranks[0]->fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0) << "connection must still be open";
  EXPECT_FALSE(sup_.connection_pending(0.1)) << "the child must not register";
  const uint64_t hb = ranks[0]->heartbeat_ns();
  auto page = wait_page(*ranks[0], [&](const proto::StatusPage& s) {
    return s.heartbeat_ns.load() > hb && s.completed_total == 1;
  });
  ASSERT_NE(page, nullptr);
  EXPECT_GT(page->heartbeat_ns.load(), hb) << "the parent's background thread still runs";
  job->close_stdin();
  EXPECT_EQ(job->wait_exit_code(kTimeout), 0) << job->output();
  EXPECT_TRUE(sup_.page_files().empty());
}

TEST_F(InjectSimTest, SupervisorGoingAwaySwitchesToPassThroughAndTheJobFinishes) {
  auto job =
      Child::start({SIM_DRIVER, "init", "gemm:gemmex:64:64:64:1", "sync", "wait",
                    "gemm:gemmex:64:64:64:1", "coll:allreduce:4096", "sync", "finalize", "exit:7"},
                   env());
  ASSERT_NE(job, nullptr);
  auto ranks = accept_ranks(1);
  ASSERT_EQ(ranks.size(), 1u) << job->output();
  ASSERT_TRUE(job->wait_for_output("READY", kTimeout)) << job->output();
  auto p = wait_page(*ranks[0], [](const proto::StatusPage& s) { return s.completed_total == 1; });
  ASSERT_NE(p, nullptr);
  ranks[0]->disconnect();
  ASSERT_TRUE(job->wait_for_output("supervisor closed its connection", kTimeout)) << job->output();
  job->close_stdin();
  EXPECT_EQ(job->wait_exit_code(kTimeout), 7) << job->output();
}

class UnwatchedRunTest : public InjectSimTest {
 protected:
  std::vector<std::string> trainer() const {
    return {SIM_TRAINER, "--steps", "3",           "--gemm", "64,64,64",
            "--bytes",   "4096",    "--exit-code", "3"};
  }
};

TEST_F(UnwatchedRunTest, WithoutThePreloadTheTrainerExitsWithItsCode) {
  std::vector<std::string> e = env();
  e.push_back(std::string(proto::kEnvPreload) + "=");  // removes it
  auto job = Child::start(trainer(), e);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->wait_exit_code(kTimeout), 3) << job->output();
}

TEST_F(UnwatchedRunTest, DisabledHooksPassThroughWithoutRegistering) {
  std::vector<std::string> e = env();
  e.push_back(std::string(proto::kEnvDisable) + "=1");
  auto job = Child::start(trainer(), e);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->wait_exit_code(kTimeout), 3) << job->output();
  EXPECT_FALSE(sup_.connection_pending(0.05));
  EXPECT_TRUE(sup_.page_files().empty());
}

TEST_F(UnwatchedRunTest, NoSupervisorSocketMeansPassThrough) {
  std::vector<std::string> e = env();
  e.push_back(std::string(proto::kEnvSocket) + "=");  // removes it
  auto job = Child::start(trainer(), e);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->wait_exit_code(kTimeout), 3) << job->output();
  EXPECT_NE(job->output().find("hooks pass through"), std::string::npos) << job->output();
  EXPECT_TRUE(sup_.page_files().empty());
}

// A bad setting costs the job nothing but one warning, said once the
// process is a rank (its first hooked call); a process that loads the
// library and never calls a hooked function (a shell, the launcher) says
// nothing. The settings are read before the library's static initialisers
// run: they must not be reset by them.
TEST_F(UnwatchedRunTest, ABadSettingIsOneWarningOnceTheProcessIsARank) {
  std::vector<std::string> e = env();
  e.push_back(std::string(proto::kEnvSocket) + "=");  // removes it: pass through, after the warning
  e.push_back("XPU_TIMER_RECORDER_SIZE=lots");
  auto job = Child::start(trainer(), e);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->wait_exit_code(kTimeout), 3) << job->output();
  const std::string warning =
      "xpu_timer inject[rank 0] WARN] XPU_TIMER_RECORDER_SIZE must be a whole number 0-1048576, "
      "got 'lots': the default (4096) is used\n";
  const std::string out = job->output();
  const size_t at = out.find(warning);
  EXPECT_NE(at, std::string::npos) << out;
  EXPECT_EQ(out.find(warning, at + 1), std::string::npos) << out;

  auto quiet = Child::start({"/bin/true"}, e);
  ASSERT_NE(quiet, nullptr);
  EXPECT_EQ(quiet->wait_exit_code(kTimeout), 0) << quiet->output();
  EXPECT_EQ(quiet->output(), "");
}

TEST_F(UnwatchedRunTest, UnreachableSupervisorMeansPassThrough) {
  std::vector<std::string> e = env();
  e.push_back(std::string(proto::kEnvSocket) + "=" + sup_.dir() + "/nobody.sock");  // replaces it
  auto job = Child::start(trainer(), e);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->wait_exit_code(kTimeout), 3) << job->output();
  EXPECT_NE(job->output().find("running without the supervisor"), std::string::npos)
      << job->output();
  EXPECT_TRUE(sup_.page_files().empty()) << "the page of an unregistered rank is removed";
}

}  // namespace
}  // namespace xpu_timer::inject
