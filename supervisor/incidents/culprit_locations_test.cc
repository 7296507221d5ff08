// Where a verdict's culprits are, from stack files written by the one writer
// (stack/stack_file.h), as the stack dump leaves them.
#include "supervisor/incidents/culprit_locations.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "supervisor/incidents/test_stack_files.h"

namespace xpu_timer::supervisor {
namespace {

// Each test writes its stack files into a folder of its own.
class CulpritLocationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "culprit_locations_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
};

RankVerdict verdict(int rank, RankState state) {
  RankVerdict v;
  v.rank = rank;
  v.state = state;
  v.registered = true;
  v.pid = 100 + rank;
  return v;
}

Snapshot snapshot_of(int nranks) {
  Snapshot snap;
  for (int r = 0; r < nranks; ++r) {
    RankSample s;
    s.rank = r;
    s.pid = 100 + r;
    snap.ranks.push_back(s);
  }
  return snap;
}

TEST_F(CulpritLocationsTest, TheCulpritsOfTheVerdictGetTheirPlaceTheOthersNone) {
  StackDumpReport dump;
  dump.ranks = {written(dir_, 0, "all_reduce_here"), written(dir_, 1, "stuck_in_host_code"),
                written(dir_, 2, "stuck_in_host_code"), written(dir_, 3, "lost")};
  HangReport verdict_now;
  verdict_now.hung = true;
  verdict_now.ranks = {verdict(0, RankState::kStuck), verdict(1, RankState::kMissing),
                       verdict(2, RankState::kUnresponsive), verdict(3, RankState::kMissing)};
  verdict_now.ranks[3].pid = 999;  // rank 3 restarted since its stacks were taken
  CulpritLocations places;
  EXPECT_EQ(places.learn(dump, verdict_now), 2u);
  Snapshot snap = snapshot_of(4);
  places.annotate(&snap);
  const std::vector<CodeFrame> expected = {CodeFrame{"stuck_in_host_code", kTrainer, 184, true},
                                           CodeFrame{"train_step", kTrainer, 226, true}};
  EXPECT_TRUE(snap.ranks[0].where.empty());
  EXPECT_EQ(snap.ranks[1].where, expected);
  EXPECT_EQ(snap.ranks[2].where, expected);
  EXPECT_TRUE(snap.ranks[3].where.empty());
  // Another process of rank 1 now: the place was not its.
  snap = snapshot_of(4);
  snap.ranks[1].pid = 555;
  places.annotate(&snap);
  EXPECT_TRUE(snap.ranks[1].where.empty());
  places.clear();
  snap = snapshot_of(4);
  places.annotate(&snap);
  EXPECT_TRUE(snap.ranks[2].where.empty());
}

TEST_F(CulpritLocationsTest, AFileThatDoesNotReadIsOneErrorNotAPlace) {
  StackDumpReport dump;
  dump.ranks = {written(dir_, 1, "stuck_in_host_code")};
  std::filesystem::resize_file(dump.ranks[0].file, 20);  // truncated
  std::vector<std::string> errors;
  EXPECT_TRUE(places_in_dump(dump, {1}, {}, &errors).empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find(dump.ranks[0].file), std::string::npos) << errors[0];
}

}  // namespace
}  // namespace xpu_timer::supervisor
