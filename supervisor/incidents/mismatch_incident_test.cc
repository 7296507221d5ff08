// A collective mismatch's odd ranks get their places from the mismatch's
// stack files (written by the one writer, as the stack dump leaves them).
#include "supervisor/incidents/mismatch_incident.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "supervisor/incidents/test_stack_files.h"

namespace xpu_timer::supervisor {
namespace {

class MismatchIncidentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "mismatch_incident_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Keeps one entry, as CollectiveMonitor does, and records the places
  // handed to `locate`.
  class OneEntryLedger : public MismatchLedger {
   public:
    nlohmann::json remember(const Mismatch&, nlohmann::json entry) override {
      kept = entry;
      return nlohmann::json::array({kept});
    }
    nlohmann::json locate(const Mismatch&, const RankPlaces& places) override {
      located = places;
      ++locate_calls;
      kept["where"]["3"] = places.begin()->second[0].function;
      return nlohmann::json::array({kept});
    }
    nlohmann::json kept;
    RankPlaces located;
    int locate_calls = 0;
  };
  std::string dir_;
  OneEntryLedger ledger_;
  nlohmann::json& kept_ = ledger_.kept;
  RankPlaces& located_ = ledger_.located;
  int& locate_calls_ = ledger_.locate_calls;
};

Mismatch four_ranks_rank3_odd() {
  Mismatch m;
  m.comm_hash = 0x1a2b3c4d5e6f7a8bull;
  m.seq = 6;
  m.nranks = 4;
  m.kind = "op";
  m.ranks = {0, 1, 2, 3};
  m.odd_ranks = {3};
  m.summary = "ranks 0-2 issued AllReduce and rank 3 AllGather";
  return m;
}

const std::vector<CodeFrame> kHeld = {
    CodeFrame{"held_after_odd_collective", kTrainer, 184, true},
    CodeFrame{"train_step", kTrainer, 226, true}};

TEST_F(MismatchIncidentTest, TheOddRankOfThisNodeGetsItsPlaceTheOthersNone) {
  IncidentDumps dumps("", [] { return std::vector<RankRecord>{}; });  // dumps nothing
  MismatchIncident incident(&dumps, dir_, &ledger_, [](MismatchStacks) {});
  const Mismatch m = four_ranks_rank3_odd();
  incident.on_mismatch(m);
  // Reported at once, before any stack: no place yet.
  EXPECT_EQ(kept_.at("where"), nlohmann::json::object()) << kept_.dump(2);
  EXPECT_TRUE(kept_.at("stacks").is_null());
  EXPECT_EQ(kept_.at("odd_ranks"), nlohmann::json::array({3}));

  StackDumpReport dump;
  dump.reason = "mismatch";
  dump.ranks = {written(dir_, 0, "all_reduce_here"), written(dir_, 3, "held_after_odd_collective")};
  incident.on_stacks_done(m, dump);
  ASSERT_EQ(locate_calls_, 1);
  EXPECT_EQ(located_, (RankPlaces{{3, kHeld}}));
  // mismatch.json is rewritten with what locate returned.
  std::ifstream in(dir_ + "/mismatch.json");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str());
  EXPECT_EQ(doc.at("mismatches")[0].at("where").at("3"), "held_after_odd_collective") << doc;
}

TEST_F(MismatchIncidentTest, NoOddRankOrNoStackOfItHereIsNoPlace) {
  IncidentDumps dumps("", [] { return std::vector<RankRecord>{}; });
  MismatchIncident incident(&dumps, dir_, &ledger_, [](MismatchStacks) {});
  Mismatch two = four_ranks_rank3_odd();
  two.nranks = 2;
  two.ranks = {0, 1};
  two.odd_ranks = {};  // either may be the wrong one
  StackDumpReport dump;
  dump.ranks = {written(dir_, 0, "a"), written(dir_, 1, "b")};
  incident.on_stacks_done(two, dump);
  // Rank 3 is odd but on another node: this dump has no stack of it.
  incident.on_stacks_done(four_ranks_rank3_odd(), dump);
  EXPECT_EQ(locate_calls_, 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/mismatch.json"));
}

TEST(MismatchWhereLine, OddRanksAtOnePlaceShareAClause) {
  Mismatch m = four_ranks_rank3_odd();
  const std::vector<CodeFrame> native = {CodeFrame{"hold", "/src/sim_trainer_main.cc", 40, false}};
  EXPECT_EQ(mismatch_where_line(m, {{3, kHeld}}),
            "collective mismatch #6 on comm 1a2b3c4d5e6f7a8b: rank 3 (odd) in "
            "held_after_odd_collective (sim_trainer.py:184) <- train_step (sim_trainer.py:226)");
  EXPECT_EQ(mismatch_where_line(m, {{3, kHeld}, {5, native}, {6, kHeld}}),
            "collective mismatch #6 on comm 1a2b3c4d5e6f7a8b: ranks 3,6 (odd) in "
            "held_after_odd_collective (sim_trainer.py:184) <- train_step (sim_trainer.py:226); "
            "rank 5 (odd) in hold (sim_trainer_main.cc:40)");
  EXPECT_EQ(mismatch_where_line(m, {}), "");
}

}  // namespace
}  // namespace xpu_timer::supervisor
