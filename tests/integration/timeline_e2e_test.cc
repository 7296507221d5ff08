// End to end: the flight recorder. A real supervisor over a 4-rank simulated
// job; the supervisor dumps every rank's ring on the hang verdict, on a crash
// and on POST /dump/timeline, and xpu_timer_gen_trace_timeline turns a dump
// into a trace. Checked against what the sim job is known to have done.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/op_names.h"
#include "common/recorder_ring.h"
#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace timeline_e2e {

using recorder::OpState;
using recorder::RecordData;
using recorder::RingSnapshot;

RingSnapshot load_dump(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  RingSnapshot snap;
  std::string error;
  EXPECT_TRUE(recorder::RingReader::read_image(bytes.data(), bytes.size(), &snap, &error))
      << path << ": " << error;
  return snap;
}

std::vector<std::string> folders_with_prefix(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.compare(0, prefix.size(), prefix) == 0) out.push_back(dir + "/" + n);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_nccl(const RecordData& r) { return r.kind == static_cast<uint8_t>(proto::OpKind::kNccl); }

// The records of one rank for its last NCCL operations, by seq.
std::map<uint64_t, RecordData> nccl_by_seq(const RingSnapshot& s) {
  std::map<uint64_t, RecordData> out;
  for (const RecordData& r : s.records) {
    if (is_nccl(r)) out[r.seq] = r;
  }
  return out;
}

TEST(TimelineE2E, HangDumpHoldsEveryRanksRecentWorkAndTheMissingRanksLastCollective) {
  constexpr int kHangRank = 2;
  SupervisedJob job(
      "timeline-hang", {"--hang-timeout", "2", "--on-hang", "kill", "--kill-grace", "3"},
      sim_job(4, false,
              {"--steps", "100000", "--step-ms", "20", "--collective", "allreduce", "--bytes",
               "65536", "--hang-rank", std::to_string(kHangRank), "--hang-step", "5"}),
      {"XPU_TIMER_SAMPLE_PER_SEC=0"});  // every call timed: GPU times on all
  const std::string hang_path = job.dump_dir() + "/hang.json";
  nlohmann::json hang;
  ASSERT_TRUE(wait_until(
      [&] {
        if (!file_exists(hang_path)) return false;
        hang = nlohmann::json::parse(read_file(hang_path), nullptr, false);
        return !hang.is_discarded() && hang.contains("timeline") && !hang["timeline"].is_null();
      },
      std::chrono::seconds(60)))
      << "no hang.json naming a timeline dump; console:\n"
      << job.log();
  const std::string dir = hang["timeline"]["dir"].get<std::string>();
  uint64_t stuck_seq = 0;
  for (const auto& r : hang.at("ranks")) {
    if (r.at("state") == "stuck") stuck_seq = r.at("operation").at("seq").get<uint64_t>();
  }
  ASSERT_GT(stuck_seq, 1u) << hang.dump(2);
  EXPECT_TRUE(file_exists(dir + "/hang.json"));

  std::set<uint64_t> comms;
  for (int rank = 0; rank < 4; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const RingSnapshot snap = load_dump(dir + "/" + recorder::dump_file_name(rank, 4));
    ASSERT_FALSE(snap.records.empty());
    EXPECT_EQ(snap.rank, rank);
    const auto by_seq = nccl_by_seq(snap);
    // Every collective before the stuck one, back to the first: completed,
    // with its GPU interval on the host clock.
    for (uint64_t seq = 1; seq < stuck_seq; ++seq) {
      auto it = by_seq.find(seq);
      ASSERT_NE(it, by_seq.end()) << "collective #" << seq << " missing from the ring";
      const RecordData& r = it->second;
      EXPECT_EQ(r.state, static_cast<uint8_t>(OpState::kCompleted)) << "#" << seq;
      EXPECT_EQ(r.name, static_cast<uint16_t>(proto::OpName::kAllReduce));
      EXPECT_EQ(r.bytes, 65536u);
      EXPECT_NE(r.flags & recorder::kRecTimed, 0) << "#" << seq;
      EXPECT_GT(r.gpu_start_ns, 0u);
      EXPECT_LE(r.gpu_start_ns, r.gpu_end_ns);
      EXPECT_EQ(r.nranks, 4u);
      comms.insert(r.comm_hash);
    }
    if (rank == kHangRank) {
      EXPECT_EQ(by_seq.count(stuck_seq), 0u) << "the missing rank never issued #" << stuck_seq;
      EXPECT_EQ(by_seq.rbegin()->first, stuck_seq - 1);
    } else {
      auto it = by_seq.find(stuck_seq);
      ASSERT_NE(it, by_seq.end()) << "the stuck collective is not in the ring";
      EXPECT_TRUE(it->second.state == static_cast<uint8_t>(OpState::kIssued) ||
                  it->second.state == static_cast<uint8_t>(OpState::kRunning))
          << recorder::op_state_str(it->second.state);
      EXPECT_EQ(it->second.gpu_end_ns, 0u);
    }
    // GEMMs are recorded with their shape.
    const bool has_gemm = std::any_of(snap.records.begin(), snap.records.end(), [](const auto& r) {
      return r.kind == static_cast<uint8_t>(proto::OpKind::kGemm) && r.m > 0 && r.n > 0 &&
             r.k > 0 && r.flops > 0;
    });
    EXPECT_TRUE(has_gemm);
  }
  EXPECT_EQ(comms.size(), 1u) << "one communicator, identical on every rank";

  // The converter turns the dump into a trace a viewer loads.
  const std::string trace = dir + "/converted.json";
  const ExitStatus st = run_to_end(
      {build_dir() + "/bin/xpu_timer_gen_trace_timeline", "--path", dir, "--output", trace}, {},
      dir + "/convert.log", std::chrono::seconds(60));
  ASSERT_TRUE(st.exited && st.code == 0) << describe(st) << read_file(dir + "/convert.log");
  const auto doc = nlohmann::json::parse(read_file(trace), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  const auto& events = doc.is_array() ? doc : doc.at("traceEvents");
  std::set<int> processes;
  int flow_starts = 0;
  for (const auto& e : events) {
    if (e.value("ph", "") == "M" && e.value("name", "") == "process_name") {
      processes.insert(e.at("pid").get<int>());
    }
    if (e.value("ph", "") == "s") ++flow_starts;
  }
  EXPECT_EQ(processes.size(), 4u);
  EXPECT_GT(flow_starts, 0) << "no flow arrows joining collectives across ranks";

  auto status = job.child().wait_for(std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value()) << "supervisor still running after --on-hang kill";
}

TEST(TimelineE2E, CrashDumpHoldsTheDeadRanksRing) {
  SupervisedJob job("timeline-crash", {},
                    sim_job(2, false,
                            {"--steps", "50", "--step-ms", "20", "--crash-rank", "1",
                             "--crash-step", "4", "--crash-kind", "segv"}));
  auto status = job.child().wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(status.has_value()) << job.log();
  const auto dirs = folders_with_prefix(job.dump_dir(), "timeline-");
  ASSERT_FALSE(dirs.empty()) << "no timeline dump after the crash; console:\n" << job.log();
  EXPECT_NE(dirs.front().find("-crash"), std::string::npos) << dirs.front();
  const RingSnapshot dead = load_dump(dirs.front() + "/" + recorder::dump_file_name(1, 2));
  ASSERT_FALSE(dead.records.empty());
  EXPECT_EQ(dead.rank, 1);
  // The rank crashed at step 4: its ring holds the collectives of the steps
  // before, completed. (The Poller drains the hooks' queue every millisecond
  // while work is pending; each step lasts 20 ms, so a collective two steps
  // before the crash has been recorded and completed.)
  const auto by_seq = nccl_by_seq(dead);
  ASSERT_GE(by_seq.size(), 2u);
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    ASSERT_EQ(by_seq.count(seq), 1u) << "#" << seq;
    EXPECT_EQ(by_seq.at(seq).state, static_cast<uint8_t>(OpState::kCompleted)) << "#" << seq;
  }
}

TEST(TimelineE2E, PostDumpTimelineWritesEveryRankWithoutStoppingTheJob) {
  SupervisedJob job("timeline-request", {},
                    sim_job(2, true, {"--steps", "100000", "--step-ms", "10"}));
  ASSERT_TRUE(job.wait_registered(2, std::chrono::seconds(60))) << job.log();
  // Wait until both ranks completed work, so their rings have something.
  ASSERT_TRUE(wait_until(
      [&] {
        const auto ranks = job.get_json("/ranks");  // one object per rank
        if (!ranks.is_array()) return false;
        int busy = 0;
        for (const auto& r : ranks) busy += r.value("completed_total", 0) > 10;
        return busy == 2;
      },
      std::chrono::seconds(60)))
      << job.log();
  const auto sent = std::chrono::steady_clock::now();
  const auto reply = http_post(job.port(), "/dump/timeline");
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->status, 200) << reply->body;
  const auto body = nlohmann::json::parse(reply->body);
  EXPECT_EQ(body.at("ranks").size(), 2u) << body.dump();
  const std::string dir = body.at("dir").get<std::string>();
  for (int rank = 0; rank < 2; ++rank) {
    const RingSnapshot snap = load_dump(dir + "/" + recorder::dump_file_name(rank, 2));
    EXPECT_GT(snap.records.size(), 10u);
  }
  // The answer comes before the conversion, which the dumper's thread does;
  // the trace appears once complete. Meanwhile another request is refused:
  // 409 while it converts, 429 within the minimum interval.
  const auto busy = http_post(job.port(), "/dump/timeline");
  ASSERT_TRUE(busy.has_value());
  // The first was accepted after `sent`: an answer within the 2 s interval
  // (IncidentDumps::kRequestIntervalS) of that is a refusal, whatever the load.
  if (std::chrono::steady_clock::now() - sent < std::chrono::seconds(2)) {
    EXPECT_TRUE(busy->status == 409 || busy->status == 429) << busy->status << " " << busy->body;
  }
  EXPECT_TRUE(wait_for_dump_trace(reply->body).is_object()) << job.log();
  // xpu-timer's path is an alias, accepted once the dumper is free again.
  std::optional<HttpReply> alias;
  ASSERT_TRUE(wait_until(
      [&] {
        alias = http_post(job.port(), "/HostingService/DumpKernelTrace");
        return alias.has_value() && alias->status != 429;
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(alias->status, 200) << alias->body;
  // GET is refused.
  const auto get = http_get(job.port(), "/dump/timeline");
  ASSERT_TRUE(get.has_value());
  EXPECT_EQ(get->status, 405);
  // The conversion runs inside the supervisor: its log lines stay the
  // supervisor's, before and after it.
  EXPECT_EQ(job.log().find("gen_trace_timeline INFO"), std::string::npos) << job.log();
  job.child().signal(SIGTERM);
  EXPECT_TRUE(job.child().wait_for(std::chrono::seconds(30)).has_value());
}

}  // namespace timeline_e2e
}  // namespace xpu_timer::testing
