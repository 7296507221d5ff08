#include "supervisor/analysis/overview_json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "supervisor/analysis/synthetic_hang.h"

namespace xpu_timer::supervisor {
namespace {

using nlohmann::json;

json overview_of(const SyntheticDocuments& d) { return overview_json(d.hang, d.ranks, d.slow); }

TEST(Overview, FourRanksHangNamesTheMissingRankWhereItIsAndFoldsTheRest) {
  const json o = overview_of(synthetic_hang(synthetic_spec(4, 2)));
  EXPECT_EQ(o["version"], 1);
  EXPECT_EQ(o["verdict"], "hang");
  EXPECT_TRUE(o["hang"]["hung"].get<bool>());
  EXPECT_NE(o["hang"]["summary"].get<std::string>().find("rank 2 missing"), std::string::npos)
      << o.dump(2);
  ASSERT_EQ(o["roots"].size(), 1u) << o.dump(2);
  const json& root = o["roots"][0];
  EXPECT_EQ(root["kind"], "rank");
  EXPECT_EQ(root["ranks"], "2");
  EXPECT_EQ(root["waiters"], 3);
  ASSERT_EQ(root["culprits"].size(), 1u);
  const json& culprit = root["culprits"][0];
  EXPECT_EQ(culprit["rank"], 2);
  EXPECT_EQ(culprit["node"], 0);
  EXPECT_EQ(culprit["host"], "node-0");
  EXPECT_EQ(culprit["state"], "missing");
  EXPECT_EQ(culprit["where"][0]["function"], "stuck_in_host_code");
  EXPECT_EQ(culprit["where"][0]["line"], 88);
  EXPECT_EQ(culprit["where"][1]["function"], "train_step");

  const json& ranks = o["ranks"];
  EXPECT_EQ(ranks["expected"], 4);
  EXPECT_EQ(ranks["registered"], 4);
  EXPECT_EQ(ranks["groups_omitted"], 0);
  ASSERT_EQ(ranks["groups"].size(), 2u) << ranks.dump(2);
  const json& missing = ranks["groups"][0];  // what the others wait on comes first
  EXPECT_EQ(missing["state"], "missing");
  EXPECT_EQ(missing["ranks"], "2");
  EXPECT_EQ(missing["count"], 1);
  EXPECT_EQ(missing["operation"]["name"], "AllReduce");
  EXPECT_EQ(missing["operation"]["seq_max"], 811);  // its last completed
  EXPECT_FALSE(missing["operation"]["in_flight"].get<bool>());
  const json& stuck = ranks["groups"][1];
  EXPECT_EQ(stuck["state"], "stuck");
  EXPECT_EQ(stuck["ranks"], "0-1/3");
  EXPECT_EQ(stuck["nodes"], "0");
  EXPECT_EQ(stuck["count"], 3);
  EXPECT_EQ(stuck["operation"]["name"], "AllReduce");
  EXPECT_EQ(stuck["operation"]["comm_name"], "world");
  EXPECT_EQ(stuck["operation"]["seq_min"], 812);
  EXPECT_EQ(stuck["operation"]["seq_max"], 812);
  EXPECT_TRUE(stuck["operation"]["in_flight"].get<bool>());
  EXPECT_EQ(stuck["steps_min"], 40);
  EXPECT_EQ(stuck["steps_max"], 40);
  EXPECT_GE(stuck["pending_s_max"].get<double>(), 300.0);
  EXPECT_TRUE(stuck["late_s_max"].is_null());
}

TEST(Overview, ThousandRanksFoldIntoTwoGroupsOfAFewKilobytes) {
  const SyntheticHangSpec spec = synthetic_spec(1024, 513);
  const SyntheticDocuments d = synthetic_hang(spec);
  const std::string hang_text = d.hang.dump(2), ranks_text = d.ranks.dump(2);
  const auto start = std::chrono::steady_clock::now();
  const json o = overview_of(d);
  const double fold_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string text = o.dump();
  ASSERT_EQ(o["ranks"]["groups"].size(), 2u) << o["ranks"].dump(2);
  EXPECT_EQ(o["ranks"]["groups"][0]["ranks"], "513");
  EXPECT_EQ(o["ranks"]["groups"][1]["ranks"], "0-512/514-1023");
  EXPECT_EQ(o["ranks"]["groups"][1]["count"], 1023);
  EXPECT_EQ(o["ranks"]["groups"][1]["nodes"], "0-127");
  EXPECT_EQ(o["roots"][0]["waiters"], 1023);
  EXPECT_EQ(o["roots"][0]["culprits"][0]["node"], 64);
  // What the page polls instead of GET /hang and GET /ranks.
  EXPECT_LT(text.size(), 4096u) << text;
  std::printf(
      "1024 ranks: GET /hang %zu bytes, GET /ranks %zu bytes, GET /overview %zu bytes, "
      "folded in %.1f ms\n",
      hang_text.size(), ranks_text.size(), text.size(), fold_s * 1e3);
}

TEST(Overview, HealthyJobIsOneGroupOfOkRanks) {
  const json o = overview_of(synthetic_hang(synthetic_spec(4, -1)));
  EXPECT_EQ(o["verdict"], "healthy") << o.dump(2);
  EXPECT_TRUE(o["roots"].empty());
  ASSERT_EQ(o["ranks"]["groups"].size(), 1u);
  EXPECT_EQ(o["ranks"]["groups"][0]["state"], "ok");
  EXPECT_EQ(o["ranks"]["groups"][0]["ranks"], "0-3");
  EXPECT_LT(o["ranks"]["groups"][0]["pending_s_max"].get<double>(), 1.0);
}

TEST(Overview, ACrashedRankIsListedAndItsStateIsFresherThanTheVerdict) {
  SyntheticHangSpec spec = synthetic_spec(4, -1);
  spec.crashed_ranks = {1};
  const json o = overview_of(synthetic_hang(spec));
  EXPECT_EQ(o["crashes"]["count"], 1);
  ASSERT_EQ(o["crashes"]["latest"].size(), 1u);
  EXPECT_EQ(o["crashes"]["latest"][0]["rank"], 1);
  EXPECT_EQ(o["crashes"]["latest"][0]["summary"], spec.crash_summary);
  bool crashed_group = false;
  for (const json& g : o["ranks"]["groups"]) {
    if (g["state"] == "crashed") crashed_group = g["ranks"] == "1";
  }
  EXPECT_TRUE(crashed_group) << o["ranks"].dump(2);
}

TEST(Overview, MismatchesAndStragglersAreVerdictsWhenNothingWorseStands) {
  SyntheticDocuments d = synthetic_hang(synthetic_spec(4, -1));
  d.slow["stragglers"] = json::array({{{"rank", 3},
                                       {"node", 0},
                                       {"cause", "gpu"},
                                       {"summary", "rank 3 arrives last"},
                                       {"median_late_s", 0.02},
                                       {"late_share", 0.9}}});
  EXPECT_EQ(overview_of(d)["verdict"], "stragglers");
  EXPECT_EQ(overview_of(d)["stragglers"]["list"][0]["summary"], "rank 3 arrives last");
  d.hang["mismatch_total"] = 2;
  d.hang["mismatches"] = json::array(
      {{{"summary", "first"}, {"odd_ranks", {1}}}, {{"summary", "second"}, {"odd_ranks", {2, 3}}}});
  const json o = overview_of(d);
  EXPECT_EQ(o["verdict"], "mismatch");
  EXPECT_EQ(o["mismatches"]["total"], 2);
  EXPECT_EQ(o["mismatches"]["latest"][0]["summary"], "second");  // newest first
  EXPECT_EQ(o["mismatches"]["latest"][0]["odd_ranks"], "2-3");
}

TEST(Overview, DocumentsOfAnotherShapeReadAsAbsent) {
  json o = overview_json(json("not a document"), json(42), nullptr);
  EXPECT_EQ(o["verdict"], "waiting");
  EXPECT_TRUE(o["ranks"]["groups"].empty());
  const json hang = {{"hung", "yes"},
                     {"ranks", {{{"rank", "a"}}, {{"rank", 1}, {"state", 7}, {"node", "x"}}}},
                     {"roots", {{{"ranks", "2"}, {"waiters", 5}}, 3}},
                     {"mismatches", {1, {{"odd_ranks", "x"}}}},
                     {"stacks", {{"dir", 5}}}};
  o = overview_json(hang, json::array({{{"rank", 1}, {"steps", -4}, {"crash", "x"}}}),
                    json::object({{"stragglers", {{{"rank", "r"}}}}}));
  EXPECT_EQ(o["verdict"], "mismatch");  // two entries, of no known key, are still two
  EXPECT_FALSE(o["hang"]["hung"].get<bool>());
  ASSERT_EQ(o["ranks"]["groups"].size(), 1u) << o.dump(2);
  EXPECT_EQ(o["ranks"]["groups"][0]["state"], "unknown");
  EXPECT_TRUE(o["ranks"]["groups"][0]["steps_min"].is_null());
  EXPECT_EQ(o["roots"][0]["ranks"], "");
  EXPECT_EQ(o["mismatches"]["total"], 2);
  EXPECT_TRUE(o["stacks"]["dir"].is_null());
  EXPECT_EQ(o["crashes"]["count"], 0);
}

TEST(Overview, GroupsBeyondTheCapAreCounted) {
  json ranks = json::array();
  for (int r = 0; r < static_cast<int>(kMaxGroups) + 8; ++r) {
    ranks.push_back({{"rank", r}, {"state", "missing"}, {"reason", "reason " + std::to_string(r)}});
  }
  const json o = overview_json(json{{"ranks", ranks}}, nullptr, nullptr);
  EXPECT_EQ(o["ranks"]["groups"].size(), kMaxGroups);
  EXPECT_EQ(o["ranks"]["groups_omitted"], 8);
  EXPECT_EQ(o["ranks"]["expected"], kMaxGroups + 8);
}

}  // namespace
}  // namespace xpu_timer::supervisor
