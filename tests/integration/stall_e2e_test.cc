// End to end: a real supervisor over simulated jobs that stop with nothing in
// flight (docs/usage.md "Stalls"). Every rank sleeping in host code
// (--stall-step, both trainers), every rank SIGSTOPped while idle, and a job
// idle between steps for longer than the stall time must be reported
// stalled on GET /hang, hang.json and the log, with the stacks and timelines
// of a hang, and never killed, even under --on-hang kill. Short timeouts (1 s,
// stall factor 2 unless said) keep each test in seconds; every wait is for an
// event, bounded generously for a loaded 2-core machine.
#include <gtest/gtest.h>
#include <signal.h>

#include <functional>
#include <map>
#include <string>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace stall_e2e {

using namespace std::chrono_literals;

constexpr int kRanks = 2;

// GET /hang until `want` holds; null json on timeout.
nlohmann::json wait_hang(SupervisedJob& job, const std::function<bool(const nlohmann::json&)>& want,
                         std::chrono::milliseconds timeout) {
  nlohmann::json found;
  wait_until(
      [&] {
        const nlohmann::json h = job.get_json("/hang");
        if (!h.is_object() || !want(h)) return false;
        found = h;
        return true;
      },
      timeout);
  return found;
}

// The supervisor as every test here runs it: a 1 s hang timeout, the given
// stall factor, and --on-hang kill (which must never apply to a stall).
std::vector<std::string> supervisor_args(const char* stall_factor) {
  return {"--hang-timeout", "1",    "--stall-factor", stall_factor,
          "--on-hang",      "kill", "--kill-grace",   "3"};
}

bool every_rank_in(const nlohmann::json& hang, const std::string& state) {
  if (!hang.contains("ranks") || hang["ranks"].size() != kRanks) return false;
  for (const auto& r : hang["ranks"]) {
    if (r.value("state", "") != state) return false;
  }
  return true;
}

// The lines of the supervisor's log that hold `text`.
std::string lines_with(const std::string& log, const std::string& text) {
  std::string out;
  for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) {
    const size_t begin = log.rfind('\n', at) + 1;
    out += log.substr(begin, log.find('\n', at) - begin + 1);
  }
  return out;
}

class StallStepE2E : public ::testing::TestWithParam<bool> {};

TEST_P(StallStepE2E, EveryRankInHostCodeIsStalledDumpedAndNeverKilled) {
  const bool python = GetParam();
  SupervisedJob job(
      python ? "stall-step-py" : "stall-step-cpp", supervisor_args("2"),
      sim_job(kRanks, python,
              {"--steps", "1000", "--step-ms", "20", "--bytes", "65536", "--stall-step", "3"}));
  // Steps 0-2 take well under a second; then 2 s of nothing.
  const nlohmann::json hang = wait_hang(
      job, [](const nlohmann::json& h) { return h.value("stalled", false); }, 90s);
  ASSERT_TRUE(hang.is_object()) << "never stalled; console:\n" << job.log();
  EXPECT_EQ(hang.at("hung"), false);
  EXPECT_TRUE(hang.at("stalled_since").is_number()) << hang.dump(2);
  const std::string summary = hang.at("summary");
  EXPECT_EQ(
      summary.rfind("ranks 0-1 stalled: nothing in flight and nothing issued or completed for ", 0),
      0u)
      << summary;
  EXPECT_TRUE(every_rank_in(hang, "stalled")) << hang.dump(2);  // their heartbeats go on
  for (const auto& r : hang.at("ranks")) EXPECT_FALSE(r.contains("operation")) << r.dump();
  const std::map<int, pid_t> pids = job.rank_pids();
  ASSERT_EQ(pids.size(), static_cast<size_t>(kRanks));

  // The evidence of a hang: every rank's stacks and flight recorder.
  const nlohmann::json dumped = wait_hang(
      job,
      [](const nlohmann::json& h) {
        return h["stacks"].is_object() && !h["stacks"].value("in_progress", true) &&
               h["timeline"].is_object();
      },
      60s);
  ASSERT_TRUE(dumped.is_object()) << job.log();
  const nlohmann::json& stacks = dumped.at("stacks");
  EXPECT_EQ(stacks.at("reason"), "stall") << stacks.dump(2);
  const std::string stacks_dir = stacks.at("dir");
  const std::string mixed = read_file(stacks_dir + "/mixed_stack");
  EXPECT_NE(mixed.find("stalled_in_host_code"), std::string::npos) << stacks_dir << "\n" << mixed;
  if (python) {
    EXPECT_NE(read_file(stacks_dir + "/py_stack").find("stalled_in_host_code"), std::string::npos)
        << stacks_dir;
  }
  const std::string timeline_dir = dumped.at("timeline").at("dir");
  EXPECT_EQ(timeline_dir.substr(timeline_dir.size() - 6), "-stall") << timeline_dir;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(file_exists(timeline_dir + "/0000" + std::to_string(r) + "-00002.timeline")) << r;
  }
  const auto in_folder =
      nlohmann::json::parse(read_file(timeline_dir + "/hang.json"), nullptr, false);
  EXPECT_TRUE(in_folder.is_object() && in_folder.value("stalled", false)) << timeline_dir;

  // hang.json is rewritten once the stacks are in: the moment --on-hang kill
  // would end the job for a hang, in the same step.
  nlohmann::json file;
  ASSERT_TRUE(wait_until(
      [&] {
        file = nlohmann::json::parse(read_file(job.dump_dir() + "/hang.json"), nullptr, false);
        return file.is_object() && file.value("stalled", false) && file["stacks"].is_object() &&
               !file["stacks"].value("in_progress", true);
      },
      30s))
      << file.dump(2);
  EXPECT_EQ(file.at("hung"), false);
  // Where the ranks stand, from those stacks: each rank's "where" and the
  // sentence (logged once more).
  const nlohmann::json expected_where = sim_trainer_where(
      python, "stalled_in_host_code", python ? "time.sleep(60)" : "for (;;) sleep(60);", "main",
      python ? "stalled_in_host_code(rank, step)"
             : "if (step == opt.stall_step) stalled_in_host_code(id.rank, step);");
  nlohmann::json located;
  ASSERT_TRUE(wait_until(
      [&] {
        located = job.get_json("/hang");
        if (!located.is_object() || !located.contains("ranks")) return false;
        for (const auto& r : located.at("ranks")) {
          if (r.at("where").empty()) return false;
        }
        return true;
      },
      30s))
      << located.dump(2) << job.log();
  for (const auto& r : located.at("ranks")) {
    EXPECT_EQ(where_by_base_name(r.at("where")), expected_where) << r.dump(2);
  }
  const std::string source = python ? "sim_trainer.py:" : "sim_trainer_main.cc:";
  const std::string place = ", in stalled_in_host_code (" + source +
                            std::to_string(expected_where[0]["line"].get<int>()) + ") <- main (" +
                            source + std::to_string(expected_where[1]["line"].get<int>()) + ")";
  EXPECT_NE(located.at("summary").get<std::string>().find(place), std::string::npos)
      << located.at("summary");
  EXPECT_NE(lines_with(job.log(), "] stall: ").find(place), std::string::npos) << job.log();
  // Two polls later (a second), a job killed then would be gone: it is not.
  const std::string seen = job.get_json("/hang").value("summary", "");
  for (int polls = 0; polls < 2; ++polls) {
    std::string now = seen;
    ASSERT_TRUE(wait_until(
        [&] {
          now = job.get_json("/hang").value("summary", "");
          return now != seen;
        },
        30s));
  }
  EXPECT_FALSE(job.child().wait_for(0ms).has_value()) << job.log();
  for (const auto& [rank, pid] : pids) EXPECT_TRUE(process_alive(pid)) << "rank " << rank;
  const std::string log = job.log();
  const std::string stall_lines = lines_with(log, "] stall: ");
  EXPECT_NE(stall_lines.find("ranks 0-1 stalled: nothing in flight"), std::string::npos) << log;
  EXPECT_EQ(log.find("--on-hang kill"), std::string::npos) << log;
  EXPECT_EQ(log.find("] hang: "), std::string::npos) << log;
  EXPECT_NE(log.find("rank 1 stalled_in_host_code at step 3"), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(BothTrainers, StallStepE2E, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("python") : std::string("cpp");
                         });

// Every rank SIGSTOPped while idle (after its loop, before it exits): its
// heartbeat stops, and the job is stalled all the same, its ranks named
// unresponsive. The stall factor (15 x 1 s) puts the verdict after the 10 s
// that make a rank unresponsive (unless the stop came 5 s after the ranks'
// last operation). Continued, the ranks beat again and finish.
TEST(StallE2E, SigstoppedIdleRanksAreStalledAndUnresponsiveThenFinish) {
  SupervisedJob job(
      "stall-sigstop", supervisor_args("15"),
      sim_job(kRanks, true,
              {"--steps", "3", "--step-ms", "20", "--bytes", "65536", "--end-sleep-s", "30"}));
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string log = job.log();
        return log.find("rank 0 loop done") != std::string::npos &&
               log.find("rank 1 loop done") != std::string::npos;
      },
      90s))
      << job.log();
  // Idle for good: the ranks' pages say nothing is in flight.
  ASSERT_TRUE(wait_hang(
                  job,
                  [](const nlohmann::json& h) {
                    if (!h.contains("ranks") || h["ranks"].size() != kRanks) return false;
                    for (const auto& r : h["ranks"]) {
                      if (r.contains("operation") || !r.value("registered", false)) return false;
                    }
                    return true;
                  },
                  30s)
                  .is_object())
      << job.log();
  const std::map<int, pid_t> pids = job.rank_pids();
  ASSERT_EQ(pids.size(), static_cast<size_t>(kRanks));
  for (const auto& [rank, pid] : pids) ASSERT_EQ(::kill(pid, SIGSTOP), 0) << rank;

  // The verdict names both ranks unresponsive (a log line: the verdict's
  // stack dump attaches to the stopped ranks afterwards).
  ASSERT_TRUE(wait_until(
      [&] {
        return lines_with(job.log(), "] stall: ")
                   .find("ranks 0-1 unresponsive (no heartbeat for") != std::string::npos;
      },
      90s))
      << job.log();
  const std::string line = lines_with(job.log(), "] stall: ");
  EXPECT_NE(line.find("ranks 0-1 stalled: nothing in flight and nothing issued or completed for "),
            std::string::npos)
      << line;
  // hang.json is written (renamed into place) just after the log line.
  nlohmann::json file;
  EXPECT_TRUE(wait_until(
      [&] {
        file = nlohmann::json::parse(read_file(job.dump_dir() + "/hang.json"), nullptr, false);
        return file.is_object() && file.value("stalled", false);
      },
      30s))
      << file.dump(2);
  EXPECT_EQ(file.is_object() && file.value("hung", true), false) << file.dump(2);

  for (const auto& [rank, pid] : pids) ASSERT_EQ(::kill(pid, SIGCONT), 0) << rank;
  // Beating again: stalled, no longer unresponsive (or already finished).
  EXPECT_TRUE(wait_hang(
                  job,
                  [](const nlohmann::json& h) {
                    return every_rank_in(h, "stalled") || every_rank_in(h, "exited");
                  },
                  60s)
                  .is_object())
      << job.log();
  const auto status = job.child().wait_for(120s);
  ASSERT_TRUE(status.has_value()) << job.log();
  EXPECT_TRUE(status->exited && status->code == 0) << describe(*status) << "\n" << job.log();
  EXPECT_EQ(job.log().find("--on-hang kill"), std::string::npos) << job.log();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_NE(job.log().find("rank " + std::to_string(r) + " done"), std::string::npos) << r;
  }
}

// A job idle between steps for longer than the stall time (8 s of host work
// per step, a 2 s stall time): stalled in each, cleared by the next step's
// first operation, and it ends normally under --on-hang kill.
TEST(StallE2E, IdleBetweenStepsIsStalledThenClearedByTheNextOperation) {
  SupervisedJob job(
      "stall-clears", supervisor_args("2"),
      sim_job(kRanks, false,
              {"--steps", "2", "--step-ms", "8000", "--gemms-per-step", "1", "--bytes", "65536"}));
  const auto status = job.child().wait_for(150s);
  ASSERT_TRUE(status.has_value()) << job.log();
  EXPECT_TRUE(status->exited && status->code == 0) << describe(*status) << "\n" << job.log();
  const std::string log = job.log();
  const size_t stalled = log.find("] stall: ranks 0-1 stalled: nothing in flight");
  ASSERT_NE(stalled, std::string::npos) << log;
  EXPECT_NE(log.find("stall cleared", stalled), std::string::npos) << log;
  EXPECT_EQ(log.find("--on-hang kill"), std::string::npos) << log;
  EXPECT_EQ(log.find("] hang: "), std::string::npos) << log;
  // hang.json keeps the last stall for the post-mortem.
  const auto file = nlohmann::json::parse(read_file(job.dump_dir() + "/hang.json"), nullptr, false);
  EXPECT_EQ(file.value("stalled", false), true) << file.dump(2);
}

}  // namespace stall_e2e
}  // namespace xpu_timer::testing
