// End to end: settings changed on a running supervisor (POST /config). A job
// started with a 600 s hang timeout has it lowered to 3 s; then one rank of
// four stops (the sim trainer's --hang-file trigger) and the hang is declared
// 3 s into it, not 10 minutes, with the log saying who changed what. A bad
// value, and a browser page of another origin, change nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace config_e2e {

constexpr double kNewTimeoutS = 3.0;

TEST(ConfigE2E, AHangTimeoutLoweredLiveDeclaresTheHangAtTheNewTimeout) {
  const std::string trigger = make_temp_dir("config-trigger") + "/hang-now";
  SupervisedJob job("config-live", {"--hang-timeout", "600"},
                    sim_job(4, false,
                            {"--steps", "100000", "--step-ms", "20", "--collective", "allreduce",
                             "--bytes", "65536", "--hang-rank", "2", "--hang-file", trigger}));
  ASSERT_TRUE(job.wait_registered(4, std::chrono::seconds(60))) << job.log();
  const int port = job.port();
  nlohmann::json config = job.get_json("/config");
  ASSERT_EQ(config.at("hang_timeout_s"), 600) << config.dump(2);
  EXPECT_EQ(config.at("on_hang"), "keep");

  // Refused whole: the good value does not go in with the bad one.
  auto reply = http_request(port, "POST", "/config", R"({"on_hang": "kill", "hang_timeout_s": 0})");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 400);
  EXPECT_EQ(reply->body,
            "hang_timeout_s must be a positive number of seconds, got '0'; nothing changed\n");
  config = job.get_json("/config");
  EXPECT_EQ(config.at("hang_timeout_s"), 600);
  EXPECT_EQ(config.at("on_hang"), "keep");

  reply = http_request(port, "POST", "/config", R"({"hang_timeout_s": 3})");
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->status, 200) << reply->body;
  EXPECT_EQ(nlohmann::json::parse(reply->body).at("changed"), nlohmann::json({"hang_timeout_s"}));
  EXPECT_EQ(job.get_json("/config").at("hang_timeout_s"), kNewTimeoutS);
  // Applied before the answer, so logged before it too.
  EXPECT_NE(job.log().find("config: hang_timeout_s 600 -> 3 (POST /config from 127.0.0.1)"),
            std::string::npos)
      << job.log();

  std::ofstream(trigger) << "now\n";
  const std::string hang_path = job.dump_dir() + "/hang.json";
  ASSERT_TRUE(wait_until([&] { return file_exists(hang_path); }, std::chrono::seconds(60)))
      << "no hang.json with the timeout lowered; supervisor console:\n"
      << job.log();
  const auto hang = nlohmann::json::parse(read_file(hang_path));
  ASSERT_TRUE(hang.at("hung").get<bool>()) << hang.dump(2);
  EXPECT_EQ(hang.at("timeout_s"), kNewTimeoutS) << hang.dump(2);
  // Declared once the stuck ranks passed the new timeout, within the
  // detection's own bound (hang_e2e_test: a poll and a ring read, 2 s).
  double longest_pending = 0;
  for (const auto& r : hang.at("ranks")) {
    if (r.at("state") != "stuck") continue;
    longest_pending = std::max(longest_pending, r.at("pending_s").get<double>());
  }
  EXPECT_GE(longest_pending, kNewTimeoutS) << hang.dump(2);
  EXPECT_LE(longest_pending, kNewTimeoutS + 2.0) << "detected too late: " << hang.dump(2);
  EXPECT_NE(hang.at("summary").get<std::string>().find("stuck in AllReduce"), std::string::npos)
      << hang.at("summary");

  // The dump folder over HTTP (GET /dumps): the hang's document and the log
  // at its top level, read back through the real binary.
  const nlohmann::json dumps = job.get_json("/dumps");
  std::set<std::string> top;
  for (const auto& f : dumps.at("files")) top.insert(f.at("name").get<std::string>());
  EXPECT_TRUE(top.count("hang.json") == 1 && top.count("supervisor.log") == 1) << dumps.dump(2);
  const auto log = http_get(port, "/dumps/supervisor.log");
  ASSERT_TRUE(log.has_value());
  EXPECT_EQ(log->status, 200);
  EXPECT_NE(log->body.find("config: hang_timeout_s 600 -> 3"), std::string::npos) << log->body;
  EXPECT_EQ(http_get(port, "/dumps/..%2fconsole.log")->status, 400);
}

}  // namespace config_e2e
}  // namespace xpu_timer::testing
