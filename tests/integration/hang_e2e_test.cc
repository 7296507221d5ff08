// End to end: a real supervisor, the injected library and a 4-rank simulated
// job in which one rank stops calling collectives. The supervisor must report
// the others stuck in that collective and the quiet rank missing, within
// timeout + 2 s of the collective's launch, and with --on-hang kill end the job.
// A communicator the job named (--comm-name: ncclConfig_t::commName) is
// shown by that name in hang.json (GET /hang's document) and the log. Once
// the hang's stacks are in, the verdict says where the missing rank is: the
// sim trainer's function and line, and its caller's.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace hang_e2e {

struct HangCase {
  const char* collective;
  const char* op_name;
  int hang_rank;
  bool python;
  const char* comm_name;  // nullptr: ncclCommInitRank, no name
};

std::string case_name(const ::testing::TestParamInfo<HangCase>& info) {
  return std::string(info.param.collective) + "_rank" + std::to_string(info.param.hang_rank) +
         (info.param.python ? "_python" : "_cpp");
}

class HangE2E : public ::testing::TestWithParam<HangCase> {};

constexpr double kTimeoutS = 2.0;

TEST_P(HangE2E, ReportsStuckAndMissingRanksWithinTimeoutPlusTwoSeconds) {
  const HangCase& c = GetParam();
  std::vector<std::string> trainer = {
      "--steps",     "100000",  "--step-ms", "20",          "--collective",
      c.collective,  "--bytes", "65536",     "--hang-rank", std::to_string(c.hang_rank),
      "--hang-step", "5"};
  if (c.comm_name != nullptr) trainer.insert(trainer.end(), {"--comm-name", c.comm_name});
  SupervisedJob job("hang-" + std::string(c.collective),
                    {"--hang-timeout", "2", "--on-hang", "kill", "--kill-grace", "3"},
                    sim_job(4, c.python, trainer));
  const nlohmann::json expected_name =
      c.comm_name != nullptr ? nlohmann::json(c.comm_name) : nlohmann::json(nullptr);
  const std::string hang_path = job.dump_dir() + "/hang.json";
  ASSERT_TRUE(wait_until([&] { return file_exists(hang_path); }, std::chrono::seconds(40)))
      << "no hang.json; supervisor console:\n"
      << job.log();
  const auto hang = nlohmann::json::parse(read_file(hang_path));
  ASSERT_TRUE(hang.at("hung").get<bool>()) << hang.dump(2);
  // A stuck rank names the line that issued its collective (Python only);
  // the missing rank is in none.
  const int issued_line = sim_trainer_line(
      true, "check(lib, lib.sim_collective(kind, args.bytes), \"sim_collective\")");
  ASSERT_GT(issued_line, 0);
  const nlohmann::json issued_here = nlohmann::json::array({{{"function", "train_step"},
                                                             {"file", "sim_trainer.py"},
                                                             {"line", issued_line},
                                                             {"kind", "python"}}});

  std::set<int> stuck, missing;
  std::set<uint64_t> seqs;
  std::set<std::string> comms;
  uint64_t missing_last_completed = 0;
  double longest_pending = 0;
  for (const auto& r : hang.at("ranks")) {
    const int rank = r.at("rank").get<int>();
    const std::string state = r.at("state").get<std::string>();
    if (state == "stuck") {
      stuck.insert(rank);
      const auto& op = r.at("operation");
      EXPECT_EQ(op.at("kind").get<std::string>(), "nccl");
      EXPECT_EQ(op.at("name").get<std::string>(), c.op_name);
      seqs.insert(op.at("seq").get<uint64_t>());
      comms.insert(op.at("comm").get<std::string>());
      // A rank that entered the collective later than the first one to
      // pass the timeout is stuck with it, for less time.
      const double pending = r.at("pending_s").get<double>();
      longest_pending = std::max(longest_pending, pending);
      EXPECT_LE(pending, kTimeoutS + 2.0) << "detected too late";
      EXPECT_EQ(where_by_base_name(r.at("issued_at")),
                c.python ? issued_here : nlohmann::json::array())
          << r.dump(2);
    } else if (state == "missing") {
      EXPECT_EQ(r.at("issued_at"), nlohmann::json::array()) << r.dump(2);
      missing.insert(rank);
      missing_last_completed = r.at("last_completed_seq").get<uint64_t>();
      EXPECT_EQ(r.at("comm_name"), expected_name) << r.dump(2);
    } else {
      ADD_FAILURE() << "rank " << rank << " in unexpected state " << state;
    }
  }
  EXPECT_GE(longest_pending, kTimeoutS) << hang.dump(2);
  std::set<int> expected_stuck = {0, 1, 2, 3};
  expected_stuck.erase(c.hang_rank);
  EXPECT_EQ(stuck, expected_stuck) << hang.dump(2);
  EXPECT_EQ(missing, std::set<int>{c.hang_rank}) << hang.dump(2);
  ASSERT_EQ(seqs.size(), 1u) << "stuck ranks disagree on the collective's sequence number";
  EXPECT_EQ(comms.size(), 1u);
  EXPECT_EQ(missing_last_completed + 1, *seqs.begin());
  EXPECT_NE(hang.at("summary").get<std::string>().find(std::string("stuck in ") + c.op_name),
            std::string::npos)
      << hang.at("summary");
  ASSERT_EQ(hang.at("groups").size(), 1u) << hang.dump(2);
  EXPECT_EQ(hang.at("groups")[0].at("comm_name"), expected_name) << hang.dump(2);
  if (c.comm_name != nullptr) {
    const std::string named = "on comm " + *comms.begin() + " (" + c.comm_name + ")";
    EXPECT_NE(hang.at("summary").get<std::string>().find(named), std::string::npos)
        << hang.at("summary");
    const std::string log = job.log();
    const size_t line = log.find("hang: ");
    ASSERT_NE(line, std::string::npos) << log;
    EXPECT_NE(log.substr(line, log.find('\n', line) - line).find(named), std::string::npos) << log;
  }

  // Where the missing rank is, once its stacks are in (before the kill):
  // hang.json is rewritten with it, and the log says it in one more line.
  const std::string stuck_line = c.python ? "time.sleep(3600)" : "for (;;) pause();";
  const std::string caller = c.python ? "train_step" : "main";
  const std::string call_line =
      c.python ? "stuck_in_host_code(rank, step)" : "stuck_in_host_code(id.rank, step);";
  const nlohmann::json expected_where =
      sim_trainer_where(c.python, "stuck_in_host_code", stuck_line, caller, call_line);
  nlohmann::json located;
  ASSERT_TRUE(wait_until(
      [&] {
        const auto doc = nlohmann::json::parse(read_file(hang_path), nullptr, false);
        if (!doc.is_object() || !doc.contains("ranks")) return false;
        for (const auto& r : doc.at("ranks")) {
          if (r.at("rank") == c.hang_rank && !r.at("where").empty()) located = doc;
        }
        return !located.is_null();
      },
      std::chrono::seconds(40)))
      << "the missing rank's place never reached hang.json:\n"
      << read_file(hang_path) << job.log();
  EXPECT_EQ(where_by_base_name(located.at("ranks")[c.hang_rank].at("where")), expected_where)
      << located.at("ranks")[c.hang_rank].dump(2);
  const std::string file = c.python ? "sim_trainer.py:" : "sim_trainer_main.cc:";
  const std::string place =
      "in stuck_in_host_code (" + file + std::to_string(expected_where[0]["line"].get<int>()) +
      ") <- " + caller + " (" + file + std::to_string(expected_where[1]["line"].get<int>()) + ")";
  // The sentence as logged once the place was in (hang.json may have been
  // rewritten since, by the kill: "rank 2 exited", its place kept).
  const std::string log = job.log();
  const std::string named = "rank " + std::to_string(c.hang_rank) + " missing (last completed #" +
                            std::to_string(missing_last_completed) + " on that comm), " + place;
  const size_t at = log.find(named);
  ASSERT_NE(at, std::string::npos) << log;
  const size_t line_start = log.rfind('\n', at) + 1;
  EXPECT_NE(log.substr(line_start, at - line_start).find("hang: "), std::string::npos) << log;

  // --on-hang kill: the job is ended and the supervisor follows it.
  auto status = job.child().wait_for(std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value()) << "supervisor still running after --on-hang kill";
  EXPECT_FALSE(status->exited && status->code == 0) << describe(*status);
}

INSTANTIATE_TEST_SUITE_P(
    AnyRankAnyCollective, HangE2E,
    ::testing::Values(HangCase{"allreduce", "AllReduce", 2, true, "tp_group"},
                      HangCase{"allgather", "AllGather", 0, false, nullptr},
                      HangCase{"reducescatter", "ReduceScatter", 3, true, nullptr},
                      HangCase{"broadcast", "Broadcast", 1, false, "dp_group"}),
    case_name);

// Two communicators as tensor and data parallel groups are: the world, and
// the world split into {0,2} and {1,3} ("tp"). Rank 3 stops before its tp
// all-reduce of step 5: rank 1 waits for it in tp #6, ranks 0 and 2 finish
// theirs and wait in the world's #7 for ranks 1 and 3. The verdict leads with
// rank 3, the root, then who waits on it, and hang.json has the graph.
TEST(HangE2EGroups, TheRootOfAHangAcrossCommunicatorsLeadsTheVerdict) {
  for (bool python : {false, true}) {
    SupervisedJob job(
        std::string("hang-groups-") + (python ? "py" : "cpp"),
        {"--hang-timeout", "2", "--on-hang", "kill", "--kill-grace", "3"},
        sim_job(4, python,
                {"--steps", "100000", "--step-ms", "20", "--bytes", "65536", "--second-comm-bytes",
                 "65536", "--second-comm-groups", "2", "--comm-name", "world", "--hang-rank", "3",
                 "--hang-step", "5", "--hang-before-second"}));
    // The verdict grows as the ranks pass the timeout one after the other
    // (ranks 0 and 2 reach the world's #7 a step after rank 1 stopped in
    // tp #6): wait for the document that has all three behind rank 3.
    const std::string hang_path = job.dump_dir() + "/hang.json";
    nlohmann::json hang;
    const auto all_waiting = [&] {
      if (!file_exists(hang_path)) return false;
      hang = nlohmann::json::parse(read_file(hang_path), nullptr, /*allow_exceptions=*/false);
      if (!hang.is_object() || !hang.contains("roots") || hang.at("roots").size() != 1) {
        return false;
      }
      return root_waiter_count(hang.at("roots")[0]) == 3;
    };
    ASSERT_TRUE(wait_until(all_waiting, std::chrono::seconds(40))) << hang.dump(2) << job.log();
    ASSERT_TRUE(hang.at("hung").get<bool>()) << hang.dump(2);
    ASSERT_EQ(hang.at("roots").size(), 1u) << hang.dump(2);
    const auto& root = hang.at("roots")[0];
    EXPECT_EQ(root.at("kind"), "rank") << root.dump();
    EXPECT_EQ(root.at("ranks"), nlohmann::json::array({3})) << root.dump();
    EXPECT_EQ(root.at("waiters"), nlohmann::json::parse("[[0,1,2]]")) << root.dump();
    for (const auto& r : hang.at("ranks")) {
      const int rank = r.at("rank").get<int>();
      std::set<int> waits;
      for (const auto& w : r.at("waits_for")) waits.insert(w.at("rank").get<int>());
      if (rank == 1) {
        EXPECT_EQ(waits, (std::set<int>{3})) << r.dump(2);
      } else if (rank == 0 || rank == 2) {
        EXPECT_EQ(waits, (std::set<int>{1, 3})) << r.dump(2);
      } else {
        EXPECT_TRUE(waits.empty()) << r.dump(2);
      }
    }
    const std::string summary = hang.at("summary").get<std::string>();
    EXPECT_EQ(summary.rfind("rank 3 missing (last completed #6 on comm ", 0), 0u) << summary;
    // The root's place joins its clause once its stacks are in (the verdict
    // never waits for them), between the clause and who waits on it.
    const std::string waiting =
        "; waiting on it: ranks 0/2 in AllReduce #7 on world, rank 1 in AllReduce #6 on "
        "world_split";
    const size_t head = summary.find("(world))");
    ASSERT_NE(head, std::string::npos) << summary;
    const std::string rest = summary.substr(head + std::string("(world))").size());
    const std::string placed = ", in stuck_in_host_code (sim_trainer.py:";
    EXPECT_TRUE(rest.rfind(waiting, 0) == 0 ||
                (rest.rfind(placed, 0) == 0 &&
                 rest.find(") <- train_step (sim_trainer.py:") != std::string::npos &&
                 rest.find(waiting) != std::string::npos))
        << summary;
    job.child().wait_for(std::chrono::seconds(60));
  }
}

// The hang document at `path` once `ready` holds for it (the verdict grows as
// the ranks pass the timeout one after the other).
nlohmann::json hang_document_when(const std::string& path,
                                  const std::function<bool(const nlohmann::json&)>& ready,
                                  SupervisedJob* job) {
  nlohmann::json hang;
  const auto done = [&] {
    if (!file_exists(path)) return false;
    hang = nlohmann::json::parse(read_file(path), nullptr, /*allow_exceptions=*/false);
    return hang.is_object() && hang.contains("roots") && ready(hang);
  };
  EXPECT_TRUE(wait_until(done, std::chrono::seconds(60))) << hang.dump(2) << job->log();
  return hang;
}

// Tensor x pipeline x data parallel groups as Megatron builds them (8 ranks,
// TP2 x PP2 x DP2: tp {0,1} {2,3} {4,5} {6,7}, dp {0,2} {1,3} {4,6} {5,7},
// pp {0,4} {1,5} {2,6} {3,7}), each step a world all-reduce then tp, pp, dp.
// Rank 3 stops before its tp all-reduce of step 5: rank 2 waits for it in
// tp, rank 7 in pp, rank 1 in dp; behind rank 2 wait rank 6 (pp) and rank 0
// (dp); behind rank 7 rank 5 (dp); behind rank 6 rank 4 (dp). One root, the
// chain by level, and every waiter's own edges.
TEST(HangE2EGroups, ThreeDimensionalParallelismLeadsWithItsRootAndItsChain) {
  for (bool python : {false, true}) {
    SupervisedJob job(
        std::string("hang-3d-") + (python ? "py" : "cpp"),
        {"--hang-timeout", "2", "--on-hang", "kill", "--kill-grace", "3"},
        sim_job(8, python,
                {"--steps", "100000", "--step-ms", "20", "--bytes", "65536", "--parallel", "2,2,2",
                 "--hang-rank", "3", "--hang-step", "5", "--hang-before-group", "tp"}));
    const nlohmann::json hang = hang_document_when(
        job.dump_dir() + "/hang.json",
        [](const nlohmann::json& h) {
          return h.at("roots").size() == 1 && root_waiter_count(h.at("roots")[0]) == 7;
        },
        &job);
    ASSERT_TRUE(hang.is_object() && hang.value("hung", false)) << hang.dump(2);
    const auto& root = hang.at("roots")[0];
    EXPECT_EQ(root.at("kind"), "rank") << root.dump();
    EXPECT_EQ(root.at("ranks"), nlohmann::json::array({3})) << root.dump();
    EXPECT_EQ(root.at("waiters"), nlohmann::json::parse("[[1,2,7],[0,5,6],[4]]")) << root.dump();
    const std::map<int, std::pair<int, std::string>> edge = {
        {0, {2, "dp"}}, {1, {3, "dp"}}, {2, {3, "tp"}}, {4, {6, "dp"}},
        {5, {7, "dp"}}, {6, {2, "pp"}}, {7, {3, "pp"}}};
    for (const auto& r : hang.at("ranks")) {
      const int rank = r.at("rank").get<int>();
      const auto& waits = r.at("waits_for");
      if (rank == 3) {
        EXPECT_EQ(r.at("state"), "missing") << r.dump(2);
        EXPECT_TRUE(waits.empty()) << r.dump(2);
        continue;
      }
      ASSERT_EQ(waits.size(), 1u) << r.dump(2);
      EXPECT_EQ(waits[0].at("rank"), edge.at(rank).first) << r.dump(2);
      EXPECT_EQ(waits[0].at("comm_name"), edge.at(rank).second) << r.dump(2);
    }
    const std::string summary = hang.at("summary").get<std::string>();
    EXPECT_EQ(summary.rfind("rank 3 missing", 0), 0u) << summary;
    EXPECT_NE(summary.find("; waiting on it: rank 1 in AllReduce #6 on dp, rank 2 in AllReduce #6 "
                           "on tp, rank 7 in AllReduce #6 on pp; behind them: ranks 0/5 in "
                           "AllReduce #6 on dp, rank 6 in AllReduce #6 on pp; behind them: rank 4 "
                           "in AllReduce #6 on dp"),
              std::string::npos)
        << summary;
    job.child().wait_for(std::chrono::seconds(60));
  }
}

// A deadlock by order (4 ranks, TP2 x PP1 x DP2): at step 5 rank 1 issues
// its tp all-reduce before the world one. Rank 0 waits in the world's for
// rank 1, whose world all-reduce never starts behind its tp one, in which it
// waits for rank 0. The root is that cycle; ranks 2 and 3 wait on it.
TEST(HangE2EGroups, ADeadlockByOrderIsItsOwnRoot) {
  for (bool python : {false, true}) {
    SupervisedJob job(
        std::string("hang-deadlock-") + (python ? "py" : "cpp"),
        {"--hang-timeout", "2", "--on-hang", "kill", "--kill-grace", "3"},
        sim_job(4, python,
                {"--steps", "100000", "--step-ms", "20", "--bytes", "65536", "--comm-name", "world",
                 "--parallel", "2,1,2", "--swap-rank", "1", "--swap-step", "5"}));
    const nlohmann::json hang = hang_document_when(
        job.dump_dir() + "/hang.json",
        [](const nlohmann::json& h) {
          return h.at("roots").size() == 1 && h.at("roots")[0].at("kind") == "cycle" &&
                 root_waiter_count(h.at("roots")[0]) == 2;
        },
        &job);
    ASSERT_TRUE(hang.is_object() && hang.value("hung", false)) << hang.dump(2);
    const auto& root = hang.at("roots")[0];
    EXPECT_EQ(root.at("ranks"), nlohmann::json::array({0, 1})) << root.dump();
    EXPECT_EQ(root.at("waiters"), nlohmann::json::parse("[[2,3]]")) << root.dump();
    for (const auto& r : hang.at("ranks")) {
      const int rank = r.at("rank").get<int>();
      const auto& waits = r.at("waits_for");
      ASSERT_EQ(waits.size(), 1u) << r.dump(2);
      EXPECT_EQ(waits[0].at("rank"), rank == 1 ? 0 : 1) << r.dump(2);
      EXPECT_EQ(waits[0].at("comm_name"), rank == 1 ? "tp" : "world") << r.dump(2);
    }
    const std::string summary = hang.at("summary").get<std::string>();
    EXPECT_EQ(summary.rfind("deadlock by order among ranks 0-1", 0), 0u) << summary;
    job.child().wait_for(std::chrono::seconds(60));
  }
}

TEST(HealthyE2E, StragglerAndJitterUnderAShortTimeoutAreNoHang) {
  // Rank 1 is 0.8 s late every step and every rank jitters by up to 0.2 s:
  // the others wait up to ~1 s in each all-reduce, below the 1.5 s timeout.
  SupervisedJob job("healthy", {"--hang-timeout", "1.5"},
                    sim_job(4, false,
                            {"--steps", "12", "--step-ms", "10", "--slow-rank", "1", "--slow-ms",
                             "800", "--jitter-ms", "200"}));
  auto status = job.child().wait_for(std::chrono::seconds(90));
  ASSERT_TRUE(status.has_value()) << job.log();
  EXPECT_TRUE(status->exited && status->code == 0) << describe(*status) << "\n" << job.log();
  EXPECT_FALSE(file_exists(job.dump_dir() + "/hang.json"))
      << read_file(job.dump_dir() + "/hang.json");
  EXPECT_EQ(job.log().find("hang:"), std::string::npos) << job.log();
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(job.log().find("rank " + std::to_string(r) + " done"), std::string::npos) << r;
  }
}

}  // namespace hang_e2e
}  // namespace xpu_timer::testing
