// The slow-rank analysis replayed over recordings of real multi-GPU jobs
// (tests/data/real-gpu/README.md: 4 x H200 and 4 x H100, GPT-2 DDP under
// torchrun): the truth of each recording is known, and every verdict of the
// replay must hold it. Nothing here is tuned to a file: the options are the
// supervisor's defaults.
#include "slow_replay/slow_replay.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/op_names.h"
#include "slow_replay/real_gpu_dumps.h"
#include "supervisor/analysis/straggler_feed.h"

namespace xpu_timer::slow_replay {
namespace {

namespace fs = std::filesystem;
using supervisor::SlowCause;

// Runs `cmd` through the shell; its output (both streams) into *out.
int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out->append(buf, n);
  return pclose(p);
}

timeline::LoadedDumps load(const std::string& dir, size_t ranks = 4) {
  timeline::LoadedDumps d;
  timeline::load_dumps({timeline::DumpSource{dir, -1}}, &d);
  EXPECT_TRUE(d.warnings.empty()) << d.warnings.front();
  EXPECT_EQ(d.ranks.size(), ranks) << dir;
  return d;
}

// Every way of replaying a recording: each dump alone, and all of them as
// one stream (as two dumps of one job are).
std::vector<std::pair<std::string, ReplayResult>> replays(const std::string& recording) {
  std::vector<std::pair<std::string, ReplayResult>> out;
  std::vector<timeline::LoadedDumps> all;
  const std::vector<std::string> dirs = real_gpu_dump_dirs(recording);
  EXPECT_FALSE(dirs.empty()) << recording;
  for (const std::string& dir : dirs) {
    all.push_back(load(dir));
    out.emplace_back(dir, replay({all.back()}, supervisor::StragglerOptions{}));
  }
  out.emplace_back(recording + " (all dumps)", replay(all, supervisor::StragglerOptions{}));
  return out;
}

// Every verdict of every replay of `recording` names nobody.
void expect_nobody(const std::string& recording) {
  for (const auto& [what, r] : replays(recording)) {
    ASSERT_GE(r.verdicts.size(), 3u) << what;
    for (const ReplayVerdict& v : r.verdicts) {
      EXPECT_TRUE(v.report.stragglers.empty())
          << what << " at " << v.at_unix_s << ": " << v.report.summary;
      EXPECT_GT(v.report.collectives_judged, 0u) << what;
    }
  }
}

TEST(SlowReplayRealGpu, HealthyJobNamesNobodyInAnyWindow) {
  expect_nobody("h200x4/healthy");
  expect_nobody("h100x4/healthy");
}

// On the H100s a host delay of 5% of a step (3.4 ms before each 67 ms step)
// did not slow the job: its steps took 66.9 ms before and after the onset,
// the host running that far ahead of the GPU. It costs nothing, so nobody.
TEST(SlowReplayRealGpu, AHostDelayTheJobAbsorbsNamesNobody) { expect_nobody("h100x4/host"); }

// Every verdict names `rank` with `cause` or nobody; once named it stays
// named (the cost a verdict needs builds up over the first seconds of a
// window: StragglerOptions::min_span_s), and the last verdict names it.
void expect_only(const std::string& recording, int rank, SlowCause cause) {
  for (const auto& [what, r] : replays(recording)) {
    ASSERT_GE(r.verdicts.size(), 3u) << what;
    bool named_before = false;
    for (const ReplayVerdict& v : r.verdicts) {
      for (const supervisor::Straggler& s : v.report.stragglers) {
        EXPECT_EQ(s.rank, rank) << what << ": " << s.summary;
        EXPECT_EQ(s.cause, cause) << what << ": " << s.summary;
      }
      EXPECT_LE(v.report.stragglers.size(), 1u) << what << ": " << v.report.summary;
      if (named_before) {
        EXPECT_EQ(v.report.stragglers.size(), 1u)
            << what << " at " << v.at_unix_s << ": cleared while the slowdown lasts";
      }
      named_before = named_before || !v.report.stragglers.empty();
    }
    const supervisor::SlowReport& last = r.verdicts.back().report;
    ASSERT_EQ(last.stragglers.size(), 1u) << what << ": " << last.summary;
    EXPECT_EQ(last.stragglers[0].rank, rank) << what;
    EXPECT_EQ(last.stragglers[0].cause, cause) << what << ": " << last.summary;
  }
}

TEST(SlowReplayRealGpu, SharedGpuNamesRank2WithCauseGpu) {
  expect_only("h200x4/gpuhog", 2, SlowCause::kGpu);
}

// On the H100s the other process on GPU 2 held rank 2's host back (its launch
// queue full: it launched 57 ms late) while its GPU's queue was no deeper and
// its GEMMs no slower in their time slices: still its GPU. The dumps before
// the other process started and after it ended name nobody.
TEST(SlowReplayRealGpu, SharedGpuOnH100NamesRank2WithCauseGpuOnlyWhileShared) {
  const std::vector<std::string> dirs = real_gpu_dump_dirs("h100x4/gpuhog");
  ASSERT_EQ(dirs.size(), 3u);
  for (const std::string& dir : {dirs[0], dirs[2]}) {
    const ReplayResult r = replay({load(dir)}, supervisor::StragglerOptions{});
    ASSERT_GE(r.verdicts.size(), 3u) << dir;
    for (const ReplayVerdict& v : r.verdicts) {
      EXPECT_TRUE(v.report.stragglers.empty()) << dir << ": " << v.report.summary;
    }
  }
  const ReplayResult during = replay({load(dirs[1])}, supervisor::StragglerOptions{});
  bool named_before = false;
  for (const ReplayVerdict& v : during.verdicts) {
    for (const supervisor::Straggler& s : v.report.stragglers) {
      EXPECT_EQ(s.rank, 2) << s.summary;
      EXPECT_EQ(s.cause, SlowCause::kGpu) << s.summary;
    }
    if (named_before) {
      EXPECT_EQ(v.report.stragglers.size(), 1u) << v.report.summary;
    }
    named_before = named_before || !v.report.stragglers.empty();
  }
  ASSERT_EQ(during.verdicts.back().report.stragglers.size(), 1u);
}

TEST(SlowReplayRealGpu, HostDelayNamesRank1WithCauseHost) {
  expect_only("h200x4/host", 1, SlowCause::kHost);
}

// Host-bound jobs (2 x H200, GPT-2 at batch 1 x 128: the GPUs wait for
// Python): whatever is named, its GPU waited for its host, so the cause is
// the host, never the GPU or the link. (Which rank is named in the healthy
// job is not asserted: tests/data/real-gpu/README.md says why.)
TEST(SlowReplayRealGpu, HostBoundJobsNameOnlyHostCauses) {
  for (const char* recording : {"h200x2/hostbound-healthy", "h200x2/hostbound-host"}) {
    for (const std::string& dir : real_gpu_dump_dirs(recording)) {
      const ReplayResult r = replay({load(dir, 2)}, supervisor::StragglerOptions{});
      ASSERT_GE(r.verdicts.size(), 3u) << dir;
      for (const ReplayVerdict& v : r.verdicts) {
        for (const supervisor::Straggler& st : v.report.stragglers) {
          EXPECT_EQ(st.cause, SlowCause::kHost)
              << dir << " at " << v.at_unix_s << ": " << st.summary;
        }
      }
    }
  }
}

// Rank 1 of the host-bound job sleeps 30% of a healthy step (9.6 ms) before
// every step from DELAY_ONSET on: the means of 100 steps went from 32-39 ms
// before to 35-44 ms after (the same job healthy: 30-40 ms). Once the window
// holds only delayed steps (30 s after the onset, plus the settling time),
// every verdict names rank 1, host, and nobody else.
TEST(SlowReplayRealGpu, HostBoundHostDelayNamesRank1OnceTheWindowHoldsIt) {
  constexpr double kOnsetUnixS = 1796014469.825;  // DELAY_ONSET in console.log
  const std::vector<std::string> dirs = real_gpu_dump_dirs("h200x2/hostbound-host");
  ASSERT_EQ(dirs.size(), 3u);
  const ReplayResult r = replay({load(dirs.back(), 2)}, supervisor::StragglerOptions{});
  size_t judged = 0;
  for (const ReplayVerdict& v : r.verdicts) {
    if (v.at_unix_s < kOnsetUnixS + 30 + 2) continue;
    ++judged;
    ASSERT_EQ(v.report.stragglers.size(), 1u) << v.at_unix_s << ": " << v.report.summary;
    EXPECT_EQ(v.report.stragglers[0].rank, 1) << v.report.summary;
    EXPECT_EQ(v.report.stragglers[0].cause, SlowCause::kHost) << v.report.summary;
  }
  EXPECT_GE(judged, 20u);
}

// The same host-bound job under a release whose ranks measure the time their
// hosts block on their GPUs (inject/host_blocked.h): a late host costs at
// most its peer's blocked time less its own. Healthy, nobody is named in any
// verdict (live too, 121 polls of GET /slow; the release without the measure
// named both ranks by turns).
TEST(SlowReplayRealGpu, HostBoundHealthyJobWhoseHostsMeasureTheirWaitsNamesNobody) {
  const std::vector<std::string> dirs = real_gpu_dump_dirs("h200x2/hostbound-measured-healthy");
  ASSERT_EQ(dirs.size(), 2u);
  size_t verdicts = 0;
  for (const std::string& dir : dirs) {
    const ReplayResult r = replay({load(dir, 2)}, supervisor::StragglerOptions{});
    for (const ReplayVerdict& v : r.verdicts) {
      ++verdicts;
      EXPECT_TRUE(v.report.stragglers.empty())
          << dir << " at " << v.at_unix_s << ": " << v.report.summary;
    }
  }
  EXPECT_GE(verdicts, 40u);
}

// Rank 1 sleeps 30% of a healthy step (8.95 ms) before every step from
// DELAY_ONSET on (steps of 34-39 ms before, 42-47 ms after). Once its
// delayed steps fill two thirds of the window, rank 1 is named, host, at a
// cost its peer's blocked time bounds (where the release without the
// measure said 0.5-0.86): the last verdicts of the dump, 20-24 s after the
// onset.
TEST(SlowReplayRealGpu, HostBoundHostDelayWithMeasuredWaitsNamesRank1AtItsPeersWait) {
  constexpr double kOnsetUnixS = 1796022317.287;  // DELAY_ONSET in console.log
  const std::vector<std::string> dirs = real_gpu_dump_dirs("h200x2/hostbound-measured-host");
  ASSERT_EQ(dirs.size(), 2u);
  const ReplayResult r = replay({load(dirs.back(), 2)}, supervisor::StragglerOptions{});
  size_t judged = 0;
  for (const ReplayVerdict& v : r.verdicts) {
    if (v.at_unix_s < kOnsetUnixS + 20) continue;
    ++judged;
    ASSERT_EQ(v.report.stragglers.size(), 1u) << v.at_unix_s << ": " << v.report.summary;
    const supervisor::Straggler& st = v.report.stragglers[0];
    EXPECT_EQ(st.rank, 1) << v.report.summary;
    EXPECT_EQ(st.cause, SlowCause::kHost) << v.report.summary;
    // The bound: its peer's blocked seconds less its own, over the window's
    // time, which starts at its first collective: within two steps (0.1 s)
    // of the window's start.
    ASSERT_GE(st.evidence.peer_host_blocked_s, 0) << v.report.summary;
    EXPECT_LE(st.impact, (st.evidence.peer_host_blocked_s - st.evidence.host_blocked_s) /
                             (supervisor::StragglerOptions{}.window_s - 0.1))
        << v.report.summary;
  }
  EXPECT_GE(judged, 3u);
}

// The command prints GET /slow's document; --every one line per verdict.
TEST(SlowReplayCli, PrintsTheVerdictAsGetSlowDoes) {
  const std::vector<std::string> dirs = real_gpu_dump_dirs("h200x4/host");
  ASSERT_EQ(dirs.size(), 2u);
  std::string out;
  const int status = run(std::string(XPU_TIMER_SLOW_REPLAY_BIN) + " --path " + dirs[0] +
                             " --path " + dirs[1] + " --every",
                         &out);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  size_t lines = 0, start = 0;
  nlohmann::json last;
  while (start < out.size()) {
    const size_t nl = out.find('\n', start);
    const std::string line = out.substr(start, nl - start);
    start = nl == std::string::npos ? out.size() : nl + 1;
    if (line.empty()) continue;
    last = nlohmann::json::parse(line);
    ++lines;
    EXPECT_TRUE(last.contains("t_unix_s")) << line;
  }
  EXPECT_GE(lines, 6u);
  ASSERT_EQ(last["stragglers"].size(), 1u) << last.dump();
  EXPECT_EQ(last["stragglers"][0]["rank"], 1);
  EXPECT_EQ(last["stragglers"][0]["cause"], "host");
  EXPECT_GT(last["stragglers"][0]["evidence"]["host_bound_ops"].get<int>(), 0);
}

// The analysis's verdict every second of recorded time, from the first
// collective of `in` to one settling time after its last record.
std::vector<supervisor::SlowReport> reports_each_second(const FinalRecords& in) {
  std::vector<supervisor::SlowReport> out;
  supervisor::StragglerOptions options;
  supervisor::StragglerAnalyzer analyzer(options);
  uint64_t first = 0;
  for (const FinalRecord& r : in.records) {
    if (r.d->kind != static_cast<uint8_t>(proto::OpKind::kNccl) || r.d->comm_hash == 0) continue;
    analyzer.note_member(r.d->comm_hash, r.rank, -1);
    if (first == 0) first = r.final_ns;
  }
  if (first == 0) return out;
  const uint64_t end = in.records.back().final_ns + options.settle_ns;
  size_t next = 0;
  for (uint64_t t = first + 1'000'000'000; t <= end; t += 1'000'000'000) {
    for (; next < in.records.size() && in.records[next].final_ns <= t; ++next) {
      supervisor::feed_straggler_record(&analyzer, in.records[next].rank, *in.records[next].d,
                                        in.records[next].final_ns);
    }
    out.push_back(analyzer.analyze(t));
  }
  return out;
}

// --slim keeps what the analysis reads: the slim dumps replay to the same
// verdicts at every second, in a fraction of the bytes.
TEST(SlowReplayCli, SlimDumpsReplayTheSameVerdicts) {
  const std::vector<std::string> dirs = real_gpu_dump_dirs("h200x4/host");
  ASSERT_FALSE(dirs.empty());
  const fs::path slim =
      fs::temp_directory_path() / ("slow-replay-slim-" + std::to_string(getpid()));
  std::string out;
  const int status = run(std::string(XPU_TIMER_SLOW_REPLAY_BIN) + " --path " + dirs.back() +
                             " --slim " + slim.string(),
                         &out);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  uintmax_t before = 0, after = 0;
  for (const auto& e : fs::directory_iterator(dirs.back())) {
    if (e.path().extension() == ".timeline") before += e.file_size();
  }
  for (const auto& e : fs::directory_iterator(slim)) {
    if (e.path().extension() == ".timeline") after += e.file_size();
  }
  EXPECT_LT(after, before);
  // Verdicts at the same instants (replay() starts its clock at the first
  // record, which the slim dumps no longer hold): every second from the
  // first collective on.
  const std::vector<timeline::LoadedDumps> full{load(dirs.back())}, thin{load(slim.string())};
  const FinalRecords fa = records_in_final_order(full), fb = records_in_final_order(thin);
  EXPECT_LT(fb.records.size(), fa.records.size());
  const std::vector<supervisor::SlowReport> a = reports_each_second(fa),
                                            b = reports_each_second(fb);
  ASSERT_GE(a.size(), 5u);
  bool named = false;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const supervisor::SlowReport &x = a[i], &y = b[i];
    EXPECT_EQ(x.collectives_judged, y.collectives_judged) << i;
    ASSERT_EQ(x.stragglers.size(), y.stragglers.size()) << i << ": " << y.summary;
    for (size_t k = 0; k < x.stragglers.size(); ++k) {
      EXPECT_EQ(x.stragglers[k].rank, y.stragglers[k].rank) << i;
      EXPECT_EQ(x.stragglers[k].cause, y.stragglers[k].cause) << i;
      EXPECT_DOUBLE_EQ(x.stragglers[k].impact, y.stragglers[k].impact) << i;
      named = true;
    }
  }
  EXPECT_TRUE(named) << "the recording's straggler must be named in both";
  fs::remove_all(slim);
}

TEST(SlowReplayCli, AFolderWithoutDumpsIsOneClearError) {
  const fs::path empty =
      fs::temp_directory_path() / ("slow-replay-empty-" + std::to_string(getpid()));
  fs::create_directories(empty);
  std::string out;
  const int status =
      run(std::string(XPU_TIMER_SLOW_REPLAY_BIN) + " --path " + empty.string(), &out);
  fs::remove_all(empty);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << out;
  EXPECT_NE(out.find("no readable flight-recorder dump"), std::string::npos) << out;
}

}  // namespace
}  // namespace xpu_timer::slow_replay
