// POST /config's rules: partial changes, the ranges of the settings table,
// unknown keys, all or nothing; and LiveConfig's hand-off to the asio thread
// (applied there before the answer, withdrawn when it does not come).
#include "supervisor/live_config.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <thread>

namespace xpu_timer::supervisor {
namespace {

LiveSettings defaults() { return live_settings(Options{}); }

TEST(LiveConfig, DocumentShowsTheSettingsAndTheTablesRanges) {
  const nlohmann::json doc = config_json(defaults());
  const nlohmann::json expected = nlohmann::json::parse(R"json({
    "hang_timeout_s": 300.0, "stall_factor": 2.0, "slow_window_s": 30.0, "on_hang": "keep",
    "ranges": {
      "hang_timeout_s": {"min": 0.001, "max": 1e9, "expects": "a positive number of seconds"},
      "stall_factor": {"min": 0.0, "max": 1e9, "expects": "a number >= 0 (0: off)"},
      "slow_window_s": {"min": 1.0, "max": 1e9, "expects": "a number of seconds >= 1"},
      "on_hang": {"choices": ["keep", "kill"], "expects": "'keep' or 'kill'"}}})json");
  EXPECT_EQ(doc, expected) << doc.dump(2);
}

TEST(LiveConfig, PartialChangeSetsOnlyWhatItNames) {
  ConfigChange c;
  std::string error;
  ASSERT_TRUE(parse_config_change(R"({"hang_timeout_s": 120, "on_hang": "kill"})", &c, &error))
      << error;
  LiveSettings s = defaults();
  EXPECT_EQ(apply_config_change(c, &s),
            (std::vector<std::string>{"hang_timeout_s 300 -> 120", "on_hang keep -> kill"}));
  EXPECT_EQ(s.hang_timeout_s, 120);
  EXPECT_EQ(s.on_hang, OnHang::kKill);
  EXPECT_EQ(s.stall_factor, 2);
  EXPECT_EQ(s.slow_window_s, 30);
  // The same again changes nothing and says nothing.
  EXPECT_TRUE(apply_config_change(c, &s).empty());
  ASSERT_TRUE(parse_config_change(R"({"stall_factor": 0, "slow_window_s": 2.5})", &c, &error));
  EXPECT_EQ(apply_config_change(c, &s),
            (std::vector<std::string>{"stall_factor 2 -> 0", "slow_window_s 30 -> 2.5"}));
  ASSERT_TRUE(parse_config_change("{}", &c, &error));
  EXPECT_TRUE(c.keys.empty());
}

TEST(LiveConfig, BadValuesAreRefusedNamingTheSettingAndItsRange) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"hang_timeout_s": 0})",
       "hang_timeout_s must be a positive number of seconds, got '0'; nothing changed"},
      {R"({"hang_timeout_s": 2e9})",
       "hang_timeout_s must be a positive number of seconds, got '2000000000.0'; nothing "
       "changed"},
      {R"({"hang_timeout_s": "120"})",
       "hang_timeout_s must be a positive number of seconds, got \"120\"; nothing changed"},
      {R"({"stall_factor": -1})",
       "stall_factor must be a number >= 0 (0: off), got '-1'; "
       "nothing changed"},
      {R"({"slow_window_s": 0.5})",
       "slow_window_s must be a number of seconds >= 1, got '0.5'; nothing changed"},
      {R"({"on_hang": "maybe"})", "on_hang must be 'keep' or 'kill', got 'maybe'; nothing changed"},
      {R"({"on_hang": true})", "on_hang must be 'keep' or 'kill', got true; nothing changed"},
      {R"({"hang_timeout": 120, "x\n": 1})",
       "unknown setting 'hang_timeout' (settable: hang_timeout_s, stall_factor, slow_window_s, "
       "on_hang); unknown setting 'x?' (settable: hang_timeout_s, stall_factor, slow_window_s, "
       "on_hang); nothing changed"},
      // All or nothing: one bad value keeps the good one out too.
      {R"({"hang_timeout_s": 120, "stall_factor": -1})",
       "stall_factor must be a number >= 0 (0: off), got '-1'; nothing changed"},
      {"[1]",
       "POST /config takes a JSON object of settings, e.g. {\"hang_timeout_s\": 120}; "
       "settable: hang_timeout_s, stall_factor, slow_window_s, on_hang"},
      {"{\"hang_timeout_s\": ",
       "POST /config takes a JSON object of settings, e.g. "
       "{\"hang_timeout_s\": 120}; settable: hang_timeout_s, "
       "stall_factor, slow_window_s, on_hang"},
  };
  for (const auto& [body, message] : cases) {
    ConfigChange c;
    std::string error;
    EXPECT_FALSE(parse_config_change(body, &c, &error)) << body;
    EXPECT_EQ(error, message) << body;
  }
}

// Stands in for the asio thread: runs what is posted, in order, on its own
// thread.
class FakeAsioThread {
 public:
  FakeAsioThread() : thread_([this] { loop(); }) {}
  ~FakeAsioThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void post(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(fn));
    cv_.notify_all();
  }
  std::thread::id id() const { return thread_.get_id(); }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

TEST(LiveConfig, PostAppliesOnTheAsioThreadBeforeAnswering) {
  FakeAsioThread asio;
  std::vector<LiveSettings> applied;  // asio thread only, read after post() returned
  std::thread::id applied_on;
  LiveConfig config(
      defaults(), [&](std::function<void()> fn) { asio.post(std::move(fn)); },
      [&](const LiveSettings& s) {
        applied.push_back(s);
        applied_on = std::this_thread::get_id();
      });
  std::string reply;
  ASSERT_EQ(config.post(R"({"hang_timeout_s": 120, "stall_factor": 2})", "127.0.0.1", &reply), 200)
      << reply;
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied_on, asio.id());
  EXPECT_EQ(applied[0].hang_timeout_s, 120);
  const nlohmann::json doc = nlohmann::json::parse(reply);
  EXPECT_EQ(doc.at("hang_timeout_s"), 120);
  EXPECT_EQ(doc.at("changed"), nlohmann::json({"hang_timeout_s"}));  // stall_factor was 2
  EXPECT_EQ(nlohmann::json::parse(config.json()).at("hang_timeout_s"), 120);

  // Refused: nothing reaches the asio thread.
  EXPECT_EQ(config.post(R"({"hang_timeout_s": 60, "on_hang": "no"})", "127.0.0.1", &reply), 400);
  EXPECT_EQ(reply, "on_hang must be 'keep' or 'kill', got 'no'; nothing changed");
  EXPECT_EQ(applied.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(config.json()).at("hang_timeout_s"), 120);
}

TEST(LiveConfig, AChangeTheAsioThreadDoesNotTakeInTimeIsWithdrawn) {
  std::function<void()> late;  // posted, not run: a main thread that does not answer
  int applied = 0;
  LiveConfig config(
      defaults(), [&](std::function<void()> fn) { late = std::move(fn); },
      [&](const LiveSettings&) { ++applied; }, std::chrono::milliseconds(20));
  std::string reply;
  EXPECT_EQ(config.post(R"({"hang_timeout_s": 1})", "127.0.0.1", &reply), 503);
  EXPECT_EQ(reply,
            "the supervisor's main thread did not take the change within 20 ms (is it shutting "
            "down?); nothing changed");
  // It runs late, and must not apply: the client was told nothing changed.
  ASSERT_TRUE(late);
  late();
  EXPECT_EQ(applied, 0);
  EXPECT_EQ(nlohmann::json::parse(config.json()).at("hang_timeout_s"), 300);
}

}  // namespace
}  // namespace xpu_timer::supervisor
