// The operator page (GET /) of a real supervisor over a real 4-rank sim job
// whose rank 2 stops in host code at step 5 (the demo's story), in headless
// Chromium: the page names the hang and its root (rank 2, where it is, read
// from its stacks), folds the other three ranks into one group stuck in the
// collective with their step, links the raw documents, and shows the flame
// graph, or says that this supervisor lists no dumps (before GET /dumps
// existed). Its screenshot goes to build/test-artifacts/operator-page
// (scripts/operator_page_screenshots.sh copies it into docs/images).
// Skipped where Chromium is missing.
#include <gtest/gtest.h>

#include <string>

#include "flamegraph/chromium_driver.h"
#include "tests/integration/page_dom.h"
#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace {

TEST(OperatorPageE2E, FourRankHangIsNamedWithItsRootAndTheRestFolded) {
  XPU_TIMER_SKIP_WITHOUT_CHROMIUM();
  SupervisedJob job("operator-page", {"--hang-timeout", "2"},
                    sim_job(4, /*python=*/true,
                            {"--steps", "100000", "--step-ms", "20", "--hang-rank", "2",
                             "--hang-step", "5", "--optimizer-steps"}),
                    {"XPU_TIMER_OPTIMIZER_HOOK=__main__:register_step_hook"});
  // The verdict with the missing rank's place: its stacks are in.
  nlohmann::json hang;
  ASSERT_TRUE(wait_until(
      [&] {
        hang = job.get_json("/hang");
        return hang.is_object() && hang.value("hung", false) && hang["ranks"].size() == 4 &&
               !hang["ranks"][2]["where"].empty() && hang["stacks"].is_object() &&
               !hang["stacks"].value("in_progress", true);
      },
      std::chrono::seconds(60)))
      << hang.dump(2) << job.log();
  const int port = job.port();
  const std::string where_line = std::to_string(sim_trainer_line(true, "time.sleep(3600)"));

  flamegraph::TestFolder dir;
  const std::string dom = page_dom(dir, port);
  ASSERT_FALSE(dom.empty());
  EXPECT_EQ(element_text(dom, "verdict-word"), "HANG") << dom;
  const std::string summary = element_text(dom, "verdict-summary");
  EXPECT_NE(summary.find("ranks 0,1,3 stuck in AllReduce #"), std::string::npos) << summary;
  EXPECT_NE(summary.find("rank 2 missing"), std::string::npos) << summary;
  const std::string roots = element_text(dom, "roots");
  EXPECT_NE(roots.find("The others wait on rank 2"), std::string::npos) << roots;
  EXPECT_NE(roots.find("rank 2 missing"), std::string::npos) << roots;
  EXPECT_NE(roots.find("in stuck_in_host_code (sim_trainer.py:" + where_line + ") ← train_step"),
            std::string::npos)
      << roots;
  EXPECT_NE(roots.find("3 ranks wait on it"), std::string::npos) << roots;

  // Two groups: the root first, then the three stuck in AllReduce, with their step.
  EXPECT_EQ(count_class(dom, "group"), 2u) << element_text(dom, "groups");
  const std::string groups = element_text(dom, "groups");
  EXPECT_NE(groups.find("1 rank missing"), std::string::npos) << groups;
  EXPECT_NE(groups.find("3 ranks stuck · in AllReduce #"), std::string::npos) << groups;
  EXPECT_NE(groups.find("ranks 0-1/3 · nodes 0"), std::string::npos) << groups;
  EXPECT_NE(groups.find(" · step "), std::string::npos) << groups;
  EXPECT_NE(groups.find(" · waiting "), std::string::npos) << groups;
  EXPECT_NE(element_text(dom, "config").find("hang timeout 2.0 s"), std::string::npos) << dom;
  EXPECT_NE(element_text(dom, "updated").find("updated "), std::string::npos);
  EXPECT_EQ(element_text(dom, "error"), "");
  for (const char* raw : {"/hang", "/slow", "/ranks", "/metrics", "/overview"}) {
    EXPECT_NE(dom.find("<a href=\"" + std::string(raw) + "\">"), std::string::npos) << raw;
  }

  // The flame graph, or (a supervisor without GET /dumps) a line saying why not.
  const std::optional<HttpReply> dumps = http_get(port, "/dumps");
  ASSERT_TRUE(dumps);
  if (dumps->status == 404) {
    EXPECT_NE(element_text(dom, "flame-none").find("no dumps listing"), std::string::npos) << dom;
    EXPECT_NE(element_text(dom, "dumps-none").find("no dumps listing"), std::string::npos);
  } else {
    EXPECT_EQ(element_attribute(dom, "flame-frame", "data-loaded"), "svg") << dom;
    EXPECT_NE(element_text(dom, "flame-caption").find("rank 2 missing"), std::string::npos)
        << element_text(dom, "flame-caption");
    EXPECT_NE(dom.find("/mixed_stack.svg\""), std::string::npos);
  }
  const std::string shot = page_screenshot(dir, port, "operator-page-4-ranks.png", 1200, 1400);
  EXPECT_FALSE(shot.empty());
  std::printf("4 ranks: screenshot %s\n", shot.c_str());
}

}  // namespace
}  // namespace xpu_timer::testing
