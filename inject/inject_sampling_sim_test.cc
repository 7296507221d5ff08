// What a sampled-out call costs the user's thread, counted at the simulated
// libraries: a GEMM, a cuBLASLt matmul or a cudaMemcpyDefault copy that is
// not timed makes none of the library calls the injected library makes to
// describe or time a call (the handle's stream, the layouts' attributes,
// the pointers' kinds); a timed one makes them all. docs/architecture.md
// "The hot path", 4. And the budget of every operation: each library call
// the injected library makes on the user's thread, by entry point, so that
// a change adding one fails (InjectSimCallBudget).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/env_names.h"
#include "common/op_names.h"
#include "common/status_page_layout.h"
#include "inject/host_blocked.h"
#include "inject/testdata/fake_supervisor.h"
#include "tests/harness/child_process.h"
#include "tests/simgpu/sim_ext.h"

namespace xpu_timer::inject {
namespace {

using proto::DType;
using proto::OpName;
using testing::FakeSupervisor;
using testing::find_metric;
using testing::RegisteredRank;
using xpu_timer::testing::Child;

constexpr std::chrono::seconds kDriverTimeout{30};

// The driver's "CALLS a b c d e" line: XpuSimCountedCall counts.
std::vector<uint64_t> counted_calls(const std::string& out) {
  std::vector<uint64_t> v(XPU_SIM_COUNTED_CALLS);
  const size_t at = out.find("CALLS ");
  if (at == std::string::npos) return {};
  unsigned long c[XPU_SIM_COUNTED_CALLS] = {};
  if (std::sscanf(out.c_str() + at, "CALLS %lu %lu %lu %lu %lu", &c[0], &c[1], &c[2], &c[3],
                  &c[4]) != XPU_SIM_COUNTED_CALLS) {
    return {};
  }
  for (int i = 0; i < XPU_SIM_COUNTED_CALLS; ++i) v[i] = c[i];
  return v;
}

// A driver run under the injected library, registered with a fake
// supervisor, past its steps (it printed READY and waits for stdin to close).
struct DriverRun {
  std::unique_ptr<Child> job;
  RegisteredRank* rank = nullptr;
};

// Starts the driver with `steps` (ending in "wait") in a world of one rank;
// on failure, says why in *error.
bool run_driver(FakeSupervisor& sup, const std::string& job_id, const std::string& sample_per_sec,
                const std::vector<std::string>& steps, DriverRun* run, std::string* error,
                const std::vector<std::string>& more_env = {}) {
  std::vector<std::string> env = sup.env();
  env.insert(env.end(), more_env.begin(), more_env.end());
  env.push_back(std::string(proto::kEnvPreload) + "=" + INJECT_LIB);
  env.push_back(std::string("XPU_TIMER_SIM_LIB_DIR=") + SIM_LIB_DIR);
  env.push_back("XPU_TIMER_SIM_JOB_ID=" + job_id + "-" + std::to_string(getpid()));
  env.push_back("XPU_TIMER_SAMPLE_PER_SEC=" + sample_per_sec);
  for (const char* v : {"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=1", "LOCAL_WORLD_SIZE=1"}) {
    env.push_back(v);
  }
  std::vector<std::string> argv = {SIM_DRIVER};
  argv.insert(argv.end(), steps.begin(), steps.end());
  run->job = Child::start(argv, env);
  if (run->job == nullptr) {
    *error = "cannot start the driver";
    return false;
  }
  run->rank = sup.accept_rank(kDriverTimeout.count(), error);
  if (run->rank == nullptr) return false;
  if (!run->job->wait_for_output("READY", kDriverTimeout)) {
    *error = "the driver did not finish its steps: " + run->job->output();
    return false;
  }
  return true;
}

TEST(InjectSimSampling, SampledOutCallsMakeNoLibraryCallsOfOurs) {
  if (access(INJECT_LIB, R_OK) != 0 || access(SIM_LIB_DIR "/libsim_workload.so", R_OK) != 0) {
    GTEST_SKIP() << "inject library or simulated GPU not built";
  }
  FakeSupervisor sup;
  ASSERT_TRUE(sup.ok()) << "cannot listen on a unix socket in /tmp";
  // One timing per second and shape: most of the 300 calls of each are not
  // timed (on a loaded machine a few more are; the counts below hold for any
  // number of timed calls). The copies go between the same two buffers; the
  // free in between starts a new epoch of the direction cache (the address
  // may now be another kind of memory). The sim's memory is the host's: the
  // copies must be done before their buffer is freed.
  DriverRun run;
  std::string error;
  ASSERT_TRUE(run_driver(sup, "sampling", "1",
                         {"init", "gemm:gemmex:64:64:64:1*300", "gemm:ltmatmul:64:32:16:1*300",
                          "malloc:65536", "copy:default-h2d:4096*150", "sync", "free",
                          "malloc:65536", "copy:default-h2d:4096*150", "sync", "calls", "wait"},
                         &run, &error))
      << error;
  Child* job = run.job.get();
  RegisteredRank* rank = run.rank;
  const std::vector<uint64_t> calls = counted_calls(job->output());
  ASSERT_EQ(calls.size(), static_cast<size_t>(XPU_SIM_COUNTED_CALLS)) << job->output();

  std::unique_ptr<proto::StatusPage> p;
  const auto deadline = std::chrono::steady_clock::now() + kDriverTimeout;
  do {
    p = rank->snapshot();
    if (p != nullptr && p->completed_total == 900) break;
    usleep(2000);
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->completed_total, 900u);
  const proto::MetricSlot* gemm = find_metric(*p, OpName::kGemmEx, DType::kBF16);
  const proto::MetricSlot* lt = find_metric(*p, OpName::kLtMatmul, DType::kBF16);
  const proto::MetricSlot* copy = find_metric(*p, OpName::kMemcpyH2D, DType::kU8);
  ASSERT_TRUE(gemm != nullptr && lt != nullptr && copy != nullptr);
  EXPECT_EQ(gemm->count + gemm->untimed_count, 300u);
  EXPECT_EQ(lt->count + lt->untimed_count, 300u);
  EXPECT_EQ(copy->count + copy->untimed_count, 300u);
  EXPECT_GE(gemm->untimed_count, 1u) << "nothing was sampled out: the test proves nothing";
  // The sampled-out matmuls carry the shape the cache gave them: 2*64*32*16.
  EXPECT_EQ(lt->untimed_flops, lt->untimed_count * 2ull * 64 * 32 * 16);
  EXPECT_EQ(lt->sum_flops, lt->count * 2ull * 64 * 32 * 16);

  // cublasGetStream_v2: once per timed GEMM.
  EXPECT_EQ(calls[XPU_SIM_CUBLAS_GET_STREAM], gemm->count);
  // Layout attributes: six reads for the first matmul (the cache's miss:
  // the workload recreates equal layouts for every call), six per timed
  // one; the descriptor's TRANSA, TRANSB and compute type per timed one (a
  // bf16 matmul needs no compute type to be named; the transposes of the
  // sampled-out ones are the last timed call's).
  EXPECT_EQ(calls[XPU_SIM_LT_LAYOUT_GET], 6 + 6 * lt->count);
  EXPECT_EQ(calls[XPU_SIM_LT_DESC_GET], 3 * lt->count);
  // Two pointers per lookup: the first copy of each free epoch, and every
  // timed copy.
  EXPECT_EQ(calls[XPU_SIM_POINTER_ATTRIBUTES], 2 * 2 + 2 * copy->count);
  // The capture check stays on every timed call.
  EXPECT_EQ(calls[XPU_SIM_STREAM_IS_CAPTURING], gemm->count + lt->count + copy->count);
  EXPECT_EQ(p->hook_errors, 0u);
  job->close_stdin();
  EXPECT_EQ(job->wait_exit_code(kDriverTimeout), 0) << job->output();
}

// The driver's "USERCALLS name count,..." lines (or `tag`'s), in order: per
// entry point, how often the injected library's code called it on the
// driver's thread (OURCALLS: on the library's own threads).
std::vector<std::map<std::string, uint64_t>> user_calls(const std::string& out,
                                                        const std::string& tag = "USERCALLS") {
  std::vector<std::map<std::string, uint64_t>> snapshots;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(tag + " ", 0) != 0) continue;
    std::map<std::string, uint64_t>& m = snapshots.emplace_back();
    std::istringstream entries(line.substr(tag.size() + 1));
    for (std::string entry; std::getline(entries, entry, ',');) {
      const size_t space = entry.find(' ');
      if (space == std::string::npos) continue;
      m[entry.substr(0, space)] = std::stoull(entry.substr(space + 1));
    }
  }
  return snapshots;
}

// The calls made between two snapshots, entry points called 0 times left out.
std::map<std::string, uint64_t> calls_between(const std::map<std::string, uint64_t>& before,
                                              const std::map<std::string, uint64_t>& after) {
  std::map<std::string, uint64_t> d;
  for (const auto& [name, n] : after) {
    const auto it = before.find(name);
    const uint64_t b = it != before.end() ? it->second : 0;
    if (n > b) d[name] = n - b;
  }
  return d;
}

std::string show(const std::map<std::string, uint64_t>& m) {
  std::string s;
  for (const auto& [name, n] : m) s += name + "=" + std::to_string(n) + " ";
  return s;
}

struct CallBudgetCase {
  const char* name;
  const char* sample_per_sec;  // "0": every call timed; "0.001": none after the first
  bool timed;
};

class InjectSimCallBudget : public ::testing::TestWithParam<CallBudgetCase> {};

// What watching costs the user's thread in library calls, per operation: the
// call the hook passes on, and every call the injected library makes on its
// own behalf (describing, timing, marking). A change that adds any call on
// the user's threads fails here, whatever the GPU: the simulated libraries
// count each entry point called from the library's code on threads not its
// own (sim_ext.h XPU_SIM_ENTRY). The Poller's calls (its own thread) are not
// the user's and are not counted.
TEST_P(InjectSimCallBudget, EachOperationMakesOnlyItsBudgetOfCalls) {
  if (access(INJECT_LIB, R_OK) != 0 || access(SIM_LIB_DIR "/libsim_workload.so", R_OK) != 0) {
    GTEST_SKIP() << "inject library or simulated GPU not built";
  }
  const CallBudgetCase& c = GetParam();
  FakeSupervisor sup;
  ASSERT_TRUE(sup.ok()) << "cannot listen on a unix socket in /tmp";
  // One of each operation first (the first call of a kind sets up caches and
  // the sampling gate times the first of each shape), then each kind alone,
  // 100 times, between snapshots of the counts.
  constexpr uint64_t kN = 100;
  DriverRun run;
  std::string error;
  ASSERT_TRUE(run_driver(sup, std::string("budget-") + c.name, c.sample_per_sec,
                         {"init",
                          "malloc:65536",
                          "gemm:gemmex:64:64:64:1",
                          "gemm:ltmatmul:64:32:16:1",
                          "copy:default-h2d:4096",
                          "coll:allreduce:4096",
                          "launch:1",
                          "sync",
                          "usercalls",
                          "gemm:gemmex:64:64:64:1*100",
                          "usercalls",
                          "gemm:ltmatmul:64:32:16:1*100",
                          "usercalls",
                          "copy:default-h2d:4096*100",
                          "usercalls",
                          "coll:allreduce:4096*100",
                          "usercalls",
                          "launch:100",
                          "usercalls",
                          "part:collective_events:0",
                          "coll:allreduce:4096*100",
                          "usercalls",
                          "part:collective_events:1",
                          "part:timed_ops:0",
                          "gemm:gemmex:64:64:64:1*100",
                          "usercalls",
                          "part:timed_ops:1",
                          "part:op_records:0",
                          "gemm:gemmex:64:64:64:1*100",
                          "usercalls",
                          "part:op_records:1",
                          "sync",
                          "wait"},
                         &run, &error))
      << error;
  Child* job = run.job.get();
  RegisteredRank* rank = run.rank;
  const auto snaps = user_calls(job->output());
  ASSERT_EQ(snaps.size(), 9u) << job->output();

  using Budget = std::map<std::string, uint64_t>;
  auto with = [](Budget b, const Budget& more) {
    for (const auto& [name, n] : more) b[name] += n;
    return b;
  };
  // Event pairs come from a pool that grows by 64 pairs on the calling
  // thread when none is free (inject/event_pool.h): the device asked once,
  // 128 events created. So many calls are growth, never per operation.
  auto take_growth = [](Budget* d, uint64_t ops) {
    const auto it = d->find("cudaEventCreateWithFlags");
    if (it == d->end()) return;
    const uint64_t growths = it->second / 128;
    EXPECT_EQ(it->second, 128 * growths) << "events created outside the pool's growth";
    EXPECT_LE(growths, (ops + 63) / 64);
    d->erase(it);
    EXPECT_GE((*d)["cudaGetDevice"], growths);
    if (((*d)["cudaGetDevice"] -= growths) == 0) d->erase("cudaGetDevice");
  };
  // The user's own call, which the hook passes on: counted when the hook
  // calls it, not when the compiler made that call a jump (the return
  // address is then the user's).
  auto take_pass_through = [](Budget* d, const std::string& api, uint64_t n) {
    const auto it = d->find(api);
    if (it == d->end()) return;
    EXPECT_EQ(it->second, n) << api << " passed on more often than the user called it";
    d->erase(it);
  };
  // A timed call: its two events, the capture check before recording them.
  const Budget timing = {{"cudaEventRecord", 2 * kN}, {"cudaStreamIsCapturing", kN}};
  // ... and the device it runs on, which a GEMM or a copy does not name.
  const Budget timing_on_current_device = with(timing, {{"cudaGetDevice", kN}});
  struct Phase {
    const char* what;
    Budget budget;
    uint64_t passed = kN;  // the user's calls the hook passed on with a call of its own
  };
  // One launch in kLaunchTimedEvery of the thread's is timed around a call
  // of the hook's own (inject/host_blocked.h); the others are jumps. The
  // driver launched nothing before, so its first kN have kN / 16 of them.
  // The sim's cudaLaunchKernel passes them to its launch_user_kernel.
  const uint64_t timed_launches = kN / HostBlocked::kLaunchTimedEvery;
  const Phase phases[] = {
      // The handle's stream, when timed.
      {"cublasGemmEx",
       c.timed ? with({{"cublasGetStream_v2", kN}}, timing_on_current_device) : Budget{}},
      // Six layout reads and three descriptor reads, when timed.
      {"cublasLtMatmul", c.timed ? with({{"cublasLtMatrixLayoutGetAttribute", 6 * kN},
                                         {"cublasLtMatmulDescGetAttribute", 3 * kN}},
                                        timing_on_current_device)
                                 : Budget{}},
      // The two pointers' kinds, when timed.
      {"cudaMemcpyAsync",
       c.timed ? with({{"cudaPointerGetAttributes", 2 * kN}}, timing_on_current_device) : Budget{}},
      // A collective always records its two events: the hang clock's markers.
      {"ncclAllReduce", timing},
      // A launch is counted, and one in 16 timed on the host.
      {"cudaLaunchKernel", {{"launch_user_kernel", timed_launches}}, timed_launches},
      // A benchmark's switch (inject/bench_parts.h): collectives without
      // their events.
      {"ncclAllReduce", {}},
      // ... GEMMs never timed, whatever the sampling says ...
      {"cublasGemmEx", {}},
      // ... GEMMs only described: not sampled, not recorded.
      {"cublasGemmEx", {}},
  };
  for (size_t i = 0; i < std::size(phases); ++i) {
    Budget d = calls_between(snaps[i], snaps[i + 1]);
    take_growth(&d, kN);
    take_pass_through(&d, phases[i].what, phases[i].passed);
    EXPECT_EQ(d, phases[i].budget) << phases[i].what << " x" << kN << ": " << show(d)
                                   << "\nexpected: " << show(phases[i].budget);
  }
  // The collectives without events still advanced their communicator's
  // sequence numbers, and completed.
  std::unique_ptr<proto::StatusPage> p;
  const auto deadline = std::chrono::steady_clock::now() + kDriverTimeout;
  do {
    p = rank->snapshot();
    if (p != nullptr && p->ncomms == 1 && p->comms[0].completed_seq == 1 + 2 * kN) break;
    usleep(2000);
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->ncomms, 1u);
  EXPECT_EQ(p->comms[0].issued_seq, 1 + 2 * kN);
  EXPECT_EQ(p->comms[0].completed_seq, 1 + 2 * kN);
  job->close_stdin();
  EXPECT_EQ(job->wait_exit_code(kDriverTimeout), 0) << job->output();
}

INSTANTIATE_TEST_SUITE_P(Sampling, InjectSimCallBudget,
                         ::testing::Values(CallBudgetCase{"every_call_timed", "0", true},
                                           CallBudgetCase{"none_timed", "0.001", false}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace xpu_timer::inject

namespace xpu_timer::inject {
namespace {

// What the Poller asks of the driver: an operation it finds complete costs
// one query (its end event; the start completed before it), not two. With one
// pass a second, the collectives below are complete before most passes look:
// every one needs its successful end query, and each pass that finds the
// head in flight asks at most twice more (its end, then its start).
TEST(InjectSimPollerQueries, AnOperationFoundCompleteCostsOneQuery) {
  if (access(INJECT_LIB, R_OK) != 0 || access(SIM_LIB_DIR "/libsim_workload.so", R_OK) != 0) {
    GTEST_SKIP() << "inject library or simulated GPU not built";
  }
  FakeSupervisor sup;
  ASSERT_TRUE(sup.ok()) << "cannot listen on a unix socket in /tmp";
  constexpr uint64_t kN = 200;
  constexpr double kPassS = 1.0;  // XPU_TIMER_POLL_INTERVAL_MS below
  const auto t0 = std::chrono::steady_clock::now();
  DriverRun run;
  std::string error;
  ASSERT_TRUE(
      run_driver(sup, "poller-queries", "0.001",
                 {"init", "coll:allreduce:4096*" + std::to_string(kN), "sync", "wait", "ourcalls"},
                 &run, &error, {"XPU_TIMER_POLL_INTERVAL_MS=1000"}))
      << error;
  std::unique_ptr<proto::StatusPage> p;
  const auto deadline = std::chrono::steady_clock::now() + kDriverTimeout;
  do {
    p = run.rank->snapshot();
    if (p != nullptr && p->ncomms == 1 && p->comms[0].completed_seq == kN) break;
    usleep(2000);
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->ncomms, 1u);
  ASSERT_EQ(p->comms[0].completed_seq, kN) << "the collectives did not complete";
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.job->close_stdin();
  ASSERT_TRUE(run.job->wait_for_output("OURCALLS", kDriverTimeout)) << run.job->output();
  EXPECT_EQ(run.job->wait_exit_code(kDriverTimeout), 0) << run.job->output();
  const auto ours = user_calls(run.job->output(), "OURCALLS");
  ASSERT_EQ(ours.size(), 1u) << run.job->output();
  const auto it = ours[0].find("cudaEventQuery");
  const uint64_t queries = it != ours[0].end() ? it->second : 0;
  // Passes until the last completion: one per kPassS, and the first.
  const uint64_t passes = static_cast<uint64_t>(elapsed_s / kPassS) + 2;
  EXPECT_GE(queries, kN);
  EXPECT_LE(queries, kN + 2 * passes)
      << "the Poller asked more than once about operations it found complete (" << passes
      << " passes at most in " << elapsed_s << " s)";
}

}  // namespace
}  // namespace xpu_timer::inject
