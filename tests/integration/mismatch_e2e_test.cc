// End to end: simulated jobs in which one rank issues a collective that
// disagrees with the others' (another operation, element count, dtype or
// root), as NCCL would run it: nothing hangs, the job trains on. The
// supervisor must name the collective, the ranks and their fingerprints
// within 2 s of the last rank's call, dump stacks and timelines once, and
// leave the job's exit status alone. A long healthy job with mixed
// collectives on two communicators over the same ranks gets no mismatch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace {

struct MismatchCase {
  const char* kind;
  int nranks;
  bool python;
  const char* comm_name = nullptr;  // --comm-name: the job's communicator is named
};

std::string case_name(const ::testing::TestParamInfo<MismatchCase>& info) {
  return std::string(info.param.kind) + "_" + std::to_string(info.param.nranks) + "ranks" +
         (info.param.python ? "_python" : "_cpp");
}

std::string case_name_of(const MismatchCase& c) {
  return std::string(c.kind) + "-" + std::to_string(c.nranks) + (c.python ? "-py" : "-cpp");
}

class MismatchE2E : public ::testing::TestWithParam<MismatchCase> {};

constexpr int kMismatchStep = 5;  // the 6th collective on the job's communicator

TEST_P(MismatchE2E, NamesTheCollectiveTheRanksAndTheirFingerprintsOnce) {
  const MismatchCase& c = GetParam();
  const int odd = c.nranks - 1;
  const std::string collective = std::string(c.kind) == "root" ? "broadcast" : "allreduce";
  const std::string expected_op = collective == "broadcast" ? "Broadcast" : "AllReduce";
  std::vector<std::string> trainer = {"--steps",         "20",
                                      "--step-ms",       "20",
                                      "--collective",    collective,
                                      "--bytes",         "65536",
                                      "--mismatch-rank", std::to_string(odd),
                                      "--mismatch-step", std::to_string(kMismatchStep),
                                      "--mismatch-kind", c.kind};
  if (c.comm_name != nullptr) trainer.insert(trainer.end(), {"--comm-name", c.comm_name});
  // With an odd rank, it waits right after its odd collective until this
  // file exists (the sim trainer's --mismatch-hold), so that the mismatch's
  // stacks find it there: the test creates it once the place was reported.
  const std::string release =
      ::testing::TempDir() + "mismatch-release-" + std::to_string(getpid()) + "-" + case_name_of(c);
  ::unlink(release.c_str());
  if (c.nranks > 2) trainer.insert(trainer.end(), {"--mismatch-hold", release});
  SupervisedJob job("mismatch-" + std::string(c.kind),
                    // A hang is not what this test is about: a long timeout.
                    {"--hang-timeout", "120", "--poll-ms", "100"},
                    sim_job(c.nranks, c.python, trainer));
  nlohmann::json located;
  std::string metrics;
  if (c.nranks > 2) {
    // Where the odd rank is, once the mismatch's stacks are in: GET /hang's
    // entry, then /metrics (the alert's annotation).
    ASSERT_TRUE(wait_until(
        [&] {
          const auto hang = job.get_json("/hang");
          if (!hang.is_object() || hang.at("mismatches").empty()) return false;
          const auto& m = hang.at("mismatches")[0];
          if (m.at("where").empty()) return false;
          located = m;
          return true;
        },
        std::chrono::seconds(60)))
        << job.log();
    metrics = job.metrics_when([](const std::string& text) {
                   return text.find("xpu_timer_mismatch_culprit_info{") != std::string::npos;
                 })
                  .first;
    std::ofstream(release) << "go\n";
  }
  auto status = job.child().wait_for(std::chrono::seconds(120));
  ::unlink(release.c_str());
  ASSERT_TRUE(status.has_value()) << job.log();
  // The job is not ours to end or fail: a mismatch is reported, not acted on.
  EXPECT_TRUE(status->exited && status->code == 0) << describe(*status) << "\n" << job.log();

  const std::string path = job.dump_dir() + "/mismatch.json";
  ASSERT_TRUE(file_exists(path)) << job.log();
  const auto doc = nlohmann::json::parse(read_file(path));
  ASSERT_EQ(doc.at("mismatches").size(), 1u) << doc.dump(2);
  const auto& m = doc.at("mismatches")[0];
  EXPECT_EQ(m.at("kind").get<std::string>(), c.kind) << m.dump(2);
  EXPECT_EQ(m.at("seq").get<uint64_t>(), static_cast<uint64_t>(kMismatchStep + 1)) << m.dump(2);
  EXPECT_EQ(m.at("nranks").get<int>(), c.nranks);
  EXPECT_LT(m.at("detected_after_s").get<double>(), 2.0) << m.dump(2);
  if (c.nranks > 2) {
    EXPECT_EQ(m.at("odd_ranks"), nlohmann::json::array({odd})) << m.dump(2);
  } else {
    EXPECT_TRUE(m.at("odd_ranks").empty()) << "two ranks: either may be the wrong one";
  }
  // Two fingerprints: the others' and the odd rank's, with what differs.
  const auto& fps = m.at("fingerprints");
  ASSERT_EQ(fps.size(), 2u) << m.dump(2);
  std::set<int> seen;
  for (const auto& g : fps) {
    const std::vector<int> ranks = g.at("ranks").get<std::vector<int>>();
    seen.insert(ranks.begin(), ranks.end());
    const bool is_odd = ranks == std::vector<int>{odd};
    const std::string op = g.at("op").get<std::string>();
    const uint64_t count = g.at("count").get<uint64_t>();
    if (!is_odd) {
      EXPECT_EQ(ranks.size(), static_cast<size_t>(c.nranks - 1)) << m.dump(2);
      EXPECT_EQ(op, expected_op);
      EXPECT_EQ(g.at("dtype").get<std::string>(), "bf16");
      EXPECT_EQ(count, 65536u / 2);
      continue;
    }
    const std::string kind = c.kind;
    if (kind == "op") {
      EXPECT_EQ(op, "AllGather");
    } else if (kind == "count") {
      EXPECT_EQ(count, 65536u);
    } else if (kind == "dtype") {
      EXPECT_EQ(g.at("dtype").get<std::string>(), "fp32") << m.dump(2);
    } else {
      EXPECT_EQ(g.at("root").get<int>(), 1);
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(c.nranks)) << m.dump(2);
  // The same evidence as a hang, once.
  ASSERT_TRUE(m.at("timeline").is_object()) << m.dump(2);
  EXPECT_TRUE(file_exists(m.at("timeline").at("dir").get<std::string>() + "/timeline.json"));
  ASSERT_TRUE(m.at("stacks").is_object()) << m.dump(2);
  EXPECT_TRUE(file_exists(m.at("stacks").at("dir").get<std::string>()));
  const std::string log = job.log();
  const size_t first = log.find("collective mismatch:");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("collective mismatch:", first + 1), std::string::npos) << "reported twice";
  if (c.comm_name != nullptr) {
    EXPECT_EQ(m.at("comm_name"), c.comm_name) << m.dump(2);
    const std::string named = "on comm " + m.at("comm").get<std::string>() + " (" + c.comm_name +
                              ", " + std::to_string(c.nranks) + " ranks)";
    EXPECT_NE(m.at("summary").get<std::string>().find(named), std::string::npos) << m.dump(2);
    EXPECT_NE(log.substr(first, log.find('\n', first) - first).find(named), std::string::npos)
        << log;
  } else {
    EXPECT_TRUE(m.at("comm_name").is_null()) << m.dump(2);
  }
  EXPECT_EQ(log.find("hang:"), std::string::npos) << log;

  // The Python trainer: every rank's collective carries the line that
  // issued it (its flight recorder's call site), the odd rank's is its
  // `where`. Lines derived from the trainer's source.
  const int issued_line = sim_trainer_line(
      true, "check(lib, lib.sim_collective_ex(*odd), \"sim_collective\")  # the odd collective");
  const int common_line = sim_trainer_line(
      true, "check(lib, lib.sim_collective(kind, args.bytes), \"sim_collective\")");
  ASSERT_GT(issued_line, 0);
  ASSERT_GT(common_line, 0);
  const auto issued = [&](int line) {
    return nlohmann::json::array({{{"function", "train_step"},
                                   {"file", "sim_trainer.py"},
                                   {"line", line},
                                   {"kind", "python"}}});
  };
  if (c.python) {
    ASSERT_EQ(m.at("issued_at").size(), static_cast<size_t>(c.nranks)) << m.dump(2);
    for (int r = 0; r < c.nranks; ++r) {
      EXPECT_EQ(where_by_base_name(m.at("issued_at").at(std::to_string(r))),
                issued(r == odd ? issued_line : common_line))
          << m.dump(2);
    }
    // The dump's trace: every collective slice names its line, the odd one
    // (collective #kMismatchStep+1 of the odd rank) the odd line.
    const auto trace = nlohmann::json::parse(
        read_file(m.at("timeline").at("dir").get<std::string>() + "/timeline.json"), nullptr,
        false);
    ASSERT_TRUE(trace.is_object());
    std::map<std::string, int> seen_at;
    for (const auto& e : trace.at("traceEvents")) {
      if (e.value("ph", "") != "X" || !e.contains("args") || !e.at("args").contains("seq"))
        continue;
      const auto& a = e.at("args");
      if (a.value("seq", uint64_t{0}) != static_cast<uint64_t>(kMismatchStep + 1)) continue;
      if (a.contains("issued_at")) ++seen_at[a.at("issued_at").get<std::string>()];
    }
    const std::string odd_at = "train_step (sim_trainer.py:" + std::to_string(issued_line) + ")";
    const std::string common_at = "train_step (sim_trainer.py:" + std::to_string(common_line) + ")";
    EXPECT_GE(seen_at[odd_at], 1) << trace.dump().substr(0, 2000);
    EXPECT_GE(seen_at[common_at], 1);
  } else {
    EXPECT_EQ(m.at("issued_at"), nlohmann::json::object()) << "no Python: no call site";
  }
  // Where the odd rank was: the line that issued its odd collective (Python),
  // else in held_after_odd_collective, called right after it.
  if (c.nranks <= 2) {
    EXPECT_EQ(m.at("where"), nlohmann::json::object()) << "no odd rank, no place";
    return;
  }
  const std::string wait_line =
      "for (int i = 0; i < 12000 && ::access(path, F_OK) != 0; ++i) usleep(10000);";
  const nlohmann::json expected_where =
      c.python
          ? issued(issued_line)
          : sim_trainer_where(false, "held_after_odd_collective", wait_line, "main",
                              "held_after_odd_collective(id.rank, opt.mismatch_hold.c_str());");
  const std::string key = std::to_string(odd);
  ASSERT_EQ(located.at("where").size(), 1u) << located.dump(2);
  EXPECT_EQ(where_by_base_name(located.at("where").at(key)), expected_where) << located.dump(2);
  ASSERT_TRUE(m.at("where").contains(key)) << m.dump(2);
  EXPECT_EQ(where_by_base_name(m.at("where").at(key)), expected_where) << m.dump(2);
  const std::string place = c.python
                                ? "train_step (sim_trainer.py:" + std::to_string(issued_line) + ")"
                                : "held_after_odd_collective (sim_trainer_main.cc:" +
                                      std::to_string(expected_where[0]["line"].get<int>()) +
                                      ") <- main (sim_trainer_main.cc:" +
                                      std::to_string(expected_where[1]["line"].get<int>()) + ")";
  const std::string said = "collective mismatch #" + std::to_string(kMismatchStep + 1) +
                           " on comm " + m.at("comm").get<std::string>() + ": rank " + key +
                           " (odd) in " + place + "\n";
  EXPECT_NE(log.find(said), std::string::npos) << said << "\n" << log;
  EXPECT_NE(
      metrics.find("xpu_timer_mismatch_culprit_info{rank=\"" + key + "\",where=\"" + place + "\""),
      std::string::npos)
      << metrics;
}

INSTANTIATE_TEST_SUITE_P(
    EachKindAndSize, MismatchE2E,
    ::testing::Values(MismatchCase{"op", 2, false}, MismatchCase{"op", 4, true, "tp_group"},
                      MismatchCase{"op", 8, false}, MismatchCase{"count", 2, true},
                      MismatchCase{"count", 4, false, "dp_group"}, MismatchCase{"count", 8, false},
                      MismatchCase{"dtype", 2, false}, MismatchCase{"dtype", 4, false},
                      MismatchCase{"dtype", 8, true}, MismatchCase{"root", 2, false},
                      MismatchCase{"root", 4, false}, MismatchCase{"root", 8, false}),
    case_name);

// A fast job (the plain sim trainer: a step well under a millisecond, its
// flight recorder of 4,096 records rewritten within half a second) whose odd
// rank disagrees at its very first collective: named while the job runs, as
// one at the thousandth would be (the rings are read as often as they fill,
// not only at each poll), with its collective number and odd rank.
TEST(MismatchE2EFast, AMismatchAtTheFirstCollectiveOfAFastJobIsNamedWhileItRuns) {
  SupervisedJob job("mismatch-first", {"--hang-timeout", "120"},  // the default poll: 500 ms
                    sim_job(8, false,
                            {"--steps", "4000", "--mismatch-rank", "6", "--mismatch-step", "0",
                             "--mismatch-kind", "count"}));
  auto status = job.child().wait_for(std::chrono::seconds(120));
  ASSERT_TRUE(status.has_value()) << job.log();
  EXPECT_TRUE(status->exited && status->code == 0) << describe(*status) << "\n" << job.log();
  const std::string path = job.dump_dir() + "/mismatch.json";
  ASSERT_TRUE(file_exists(path)) << job.log();
  const auto doc = nlohmann::json::parse(read_file(path));
  ASSERT_EQ(doc.at("mismatches").size(), 1u) << doc.dump(2);
  const auto& m = doc.at("mismatches")[0];
  EXPECT_EQ(m.at("seq").get<uint64_t>(), 1u) << m.dump(2);
  EXPECT_EQ(m.at("kind").get<std::string>(), "count") << m.dump(2);
  EXPECT_EQ(m.at("odd_ranks"), nlohmann::json::array({6})) << m.dump(2);
  // Named before the job ended, not only by the last look at its end.
  const std::string log = job.log();
  const size_t named = log.find("collective mismatch:");
  const size_t ended = log.find("ended with exit code");
  ASSERT_NE(named, std::string::npos) << log;
  ASSERT_NE(ended, std::string::npos) << log;
  EXPECT_LT(named, ended) << log;
}

TEST(MismatchE2EHealthy, ThousandsOfMixedCollectivesOnTwoCommunicatorsOverManyRingLapsGiveNone) {
  // All five collectives in turn on the job's communicator, plus an
  // all-reduce on a second communicator of the same ranks every step: the
  // same sequence numbers on two communicators must never be compared. The
  // rings hold 256 records, so that the check follows them over many laps
  // (a record each collective and step at least: a lap within 128 steps).
  constexpr uint64_t kCollectives = 4000;  // both communicators: >= 2000 steps, >= 15 laps
  SupervisedJob job(
      "mismatch-healthy", {"--hang-timeout", "120", "--poll-ms", "100"},
      sim_job(4, false,
              {"--steps", "1000000", "--step-ms", "20", "--collective", "mixed", "--bytes", "65536",
               "--second-comm-bytes", "32768", "--comm-name", "world"}),
      {"XPU_TIMER_RECORDER_SIZE=256"});
  ASSERT_TRUE(job.wait_registered(4, std::chrono::seconds(60))) << job.log();
  uint64_t checked = 0;
  // Until that many collectives were compared; it ends early, with the
  // reason, on the first mismatch reported.
  const bool enough = wait_until(
      [&] {
        const auto hang = job.get_json("/hang");
        if (!hang.is_object() || hang.at("mismatch_total").get<uint64_t>() != 0) return true;
        checked = hang.at("collectives_checked").get<uint64_t>();
        return checked >= kCollectives || job.child().wait_for(std::chrono::milliseconds(0));
      },
      std::chrono::minutes(5));
  const auto hang = job.get_json("/hang");
  ASSERT_TRUE(hang.is_object()) << job.log();
  ASSERT_EQ(hang.at("mismatch_total").get<uint64_t>(), 0u) << hang.at("mismatches").dump(2);
  ASSERT_FALSE(job.child().wait_for(std::chrono::seconds(0)).has_value()) << job.log();
  ASSERT_TRUE(enough) << "only " << checked << " collectives compared in 5 minutes";
  // The check ran: collectives of both communicators were compared.
  EXPECT_GE(checked, kCollectives);
  // Both communicators carry the names the job gave them (--comm-name).
  const auto ranks = job.get_json("/ranks");
  ASSERT_TRUE(ranks.is_array()) << job.log();
  for (const auto& r : ranks) {
    std::set<std::string> names;
    for (const auto& comm : r.at("comms")) {
      if (comm.at("name").is_string()) names.insert(comm.at("name").get<std::string>());
    }
    EXPECT_EQ(names, (std::set<std::string>{"world", "world_split"})) << r.dump(2);
  }
  EXPECT_FALSE(file_exists(job.dump_dir() + "/mismatch.json"));
  EXPECT_EQ(job.log().find("collective mismatch:"), std::string::npos);
}

}  // namespace
}  // namespace xpu_timer::testing
