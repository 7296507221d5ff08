#include "supervisor/metrics/culprit_metrics.h"

#include <gtest/gtest.h>

namespace xpu_timer::supervisor {
namespace {

RankVerdict verdict(int rank, RankState state, std::vector<CodeFrame> where = {}) {
  RankVerdict v;
  v.rank = rank;
  v.state = state;
  v.where = std::move(where);
  return v;
}

std::vector<RankRecord> registered(const std::vector<int>& ranks) {
  std::vector<RankRecord> out(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) out[i].reg.rank = ranks[i];
  return out;
}

const CodeFrame kStuck{"stuck_in_host_code", "/w/sim_trainer.py", 184, true};
const CodeFrame kStep{"train_step", "/w/sim_trainer.py", 226, true};

TEST(CulpritMetrics, OneSeriesPerLocalCulpritWithAKnownPlace) {
  HangReport r;
  r.hung = true;
  r.ranks = {verdict(0, RankState::kStuck, {kStep}), verdict(1, RankState::kMissing, {kStuck, kStep}),
             verdict(2, RankState::kMissing), verdict(3, RankState::kUnresponsive, {kStep}),
             verdict(4, RankState::kMissing, {kStuck})};
  // Rank 4 runs on another node: that node exports it.
  EXPECT_EQ(culprit_metrics_text(r, registered({0, 1, 2, 3}), "tr\"ain"),
            "# HELP xpu_timer_hang_culprit_info Where a rank the verdict blames (missing, "
            "unresponsive, stalled) was when its stacks were taken: its innermost frame of the "
            "user's and that frame's caller. Present while the verdict stands.\n"
            "# TYPE xpu_timer_hang_culprit_info gauge\n"
            "xpu_timer_hang_culprit_info{rank=\"1\",where=\"stuck_in_host_code (sim_trainer.py:184) "
            "<- train_step (sim_trainer.py:226)\",job_name=\"tr\\\"ain\"} 1\n"
            "xpu_timer_hang_culprit_info{rank=\"3\",where=\"train_step (sim_trainer.py:226)\","
            "job_name=\"tr\\\"ain\"} 1\n");
}

TEST(CulpritMetrics, NothingWithoutAVerdictAndAtMostAHandful) {
  HangReport r;
  r.ranks = {verdict(1, RankState::kMissing, {kStuck})};
  EXPECT_EQ(culprit_metrics_text(r, registered({1}), "train"), "");  // no verdict stands
  r.stalled = true;
  std::vector<int> local;
  r.ranks.clear();
  for (int i = 0; i < 64; ++i) {
    r.ranks.push_back(verdict(i, RankState::kStalled, {kStuck}));
    local.push_back(i);
  }
  const std::string text = culprit_metrics_text(r, registered(local), "train");
  size_t series = 0;
  for (size_t at = text.find("\nxpu_timer_hang_culprit_info{"); at != std::string::npos;
       at = text.find("\nxpu_timer_hang_culprit_info{", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, kMaxCulpritSeries);
  EXPECT_NE(text.find("{rank=\"7\","), std::string::npos);
  EXPECT_EQ(text.find("{rank=\"8\","), std::string::npos);
}

TEST(MismatchCulpritMetrics, OneSeriesPerOddRankWithAPlaceAtMostAHandful) {
  std::map<int, std::vector<CodeFrame>> places = {{3, {kStuck}}, {5, {}}};
  EXPECT_EQ(mismatch_culprit_metrics_text(places, "train"),
            "# HELP xpu_timer_mismatch_culprit_info Where an odd rank of a collective mismatch "
            "was when the stacks of its latest mismatch were taken: its innermost frame of the "
            "user's and that frame's caller.\n"
            "# TYPE xpu_timer_mismatch_culprit_info gauge\n"
            "xpu_timer_mismatch_culprit_info{rank=\"3\",where=\"stuck_in_host_code "
            "(sim_trainer.py:184)\",job_name=\"train\"} 1\n");
  EXPECT_EQ(mismatch_culprit_metrics_text({}, "train"), "");
  for (int i = 0; i < 64; ++i) places[i] = {kStuck};
  const std::string text = mismatch_culprit_metrics_text(places, "train");
  size_t series = 0;
  for (size_t at = text.find("\nxpu_timer_mismatch_culprit_info{"); at != std::string::npos;
       at = text.find("\nxpu_timer_mismatch_culprit_info{", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, kMaxCulpritSeries);
}

}  // namespace
}  // namespace xpu_timer::supervisor
