#include "supervisor/metrics/straggler_metrics.h"

#include <gtest/gtest.h>

namespace xpu_timer::supervisor {
namespace {

TEST(StragglerMetrics, RanksAndTheStragglerWithItsCause) {
  SlowReport r;
  RankLateness a;
  a.rank = 0;
  a.collectives = 100;
  a.last = 10;
  a.median_late_s = 0.0005;
  a.wait_caused_total_s = 1.5;
  RankLateness b = a;
  b.rank = 5;
  b.last = 90;
  b.median_late_s = 0.041;
  b.wait_caused_total_s = 120.25;
  r.ranks = {a, b};
  Straggler s;
  s.rank = 5;
  s.node = 1;
  s.cause = SlowCause::kGpu;
  s.comm_name = "dp";
  r.stragglers = {s};
  const std::string text = straggler_metrics_text(r, "my\"job");
  EXPECT_NE(text.find("# TYPE xpu_timer_rank_late_share gauge\n"
                      "xpu_timer_rank_late_share{rank=\"0\",job_name=\"my\\\"job\"} 0.1\n"
                      "xpu_timer_rank_late_share{rank=\"5\",job_name=\"my\\\"job\"} 0.9\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xpu_timer_rank_late_seconds{rank=\"5\",job_name=\"my\\\"job\"} 0.041\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE xpu_timer_rank_wait_caused_seconds_total counter\n"),
            std::string::npos);
  EXPECT_NE(text.find("xpu_timer_rank_wait_caused_seconds_total{rank=\"5\",job_name=\"my\\\"job\"} "
                      "120.25\n"),
            std::string::npos);
  EXPECT_NE(text.find("xpu_timer_straggler{rank=\"5\",job_name=\"my\\\"job\",node=\"1\","
                      "cause=\"gpu\",comm_name=\"dp\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("xpu_timer_stragglers{job_name=\"my\\\"job\"} 1\n"), std::string::npos);
}

TEST(StragglerMetrics, NoRankYetIsTheCountAlone) {
  const std::string text = straggler_metrics_text(SlowReport{}, "j");
  EXPECT_EQ(text,
            "# HELP xpu_timer_stragglers Ranks named stragglers now.\n"
            "# TYPE xpu_timer_stragglers gauge\n"
            "xpu_timer_stragglers{job_name=\"j\"} 0\n");
}

}  // namespace
}  // namespace xpu_timer::supervisor
