// The settings a running supervisor takes without a restart (docs/usage.md
// "HTTP"): the hang timeout, the stall factor, the slow window and --on-hang.
// GET /config shows them with their ranges; POST /config changes some or all
// of them: a JSON object such as {"hang_timeout_s": 120, "on_hang": "kill"},
// checked whole against the ranges of options.cc's settings table before
// anything changes (an unknown key, a value of the wrong type or out of range:
// 400 naming each, nothing changed).
//
// Threads: the components that use these settings (the hang detector, the
// straggler analysis, the hang incident) belong to the asio thread, and the
// HTTP thread answers the request. So LiveConfig::post() checks the body on
// the HTTP thread, hands the change to the asio thread through `post_` and
// waits (at most `wait`) until it is applied there; the asio thread applies it
// (`apply_`), logs one line per value changed ("config: hang_timeout_s 300 ->
// 120 (POST /config from 127.0.0.1)") and only then is the answer 200. A
// change the asio thread did not take in time is withdrawn: it never applies
// later, and the answer is 503. json() reads under a mutex from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "supervisor/options.h"

namespace xpu_timer::supervisor {

struct LiveSettings {
  double hang_timeout_s = 0;
  double stall_factor = 0;
  double slow_window_s = 0;
  OnHang on_hang = OnHang::kKeep;
};
LiveSettings live_settings(const Options& o);

// A POST /config body, checked: the values it sets (the others are kept).
struct ConfigChange {
  std::vector<std::string> keys;  // as given, each once
  LiveSettings values;            // the given keys' values; the rest unused
};

// false with one line in `error` naming every bad key and what it takes.
bool parse_config_change(const std::string& body, ConfigChange* change, std::string* error);

// Sets the change's values in `settings`; "hang_timeout_s 300 -> 120" for
// each value that differs.
std::vector<std::string> apply_config_change(const ConfigChange& change, LiveSettings* settings);

// GET /config: {"hang_timeout_s": 300, "stall_factor": 2, "slow_window_s": 30,
// "on_hang": "keep", "ranges": {"hang_timeout_s": {"min": 0.001, "max": 1e9,
// "expects": "a positive number of seconds"}, ..., "on_hang": {"choices":
// ["keep", "kill"], "expects": "'keep' or 'kill'"}}}.
nlohmann::json config_json(const LiveSettings& settings);

class LiveConfig {
 public:
  using Post = std::function<void(std::function<void()>)>;  // runs it on the asio thread
  using Apply = std::function<void(const LiveSettings&)>;   // on the asio thread

  LiveConfig(LiveSettings initial, Post post, Apply apply,
             std::chrono::milliseconds wait = std::chrono::seconds(5));

  // Any thread: GET /config's document.
  std::string json() const;
  // HTTP thread: POST /config from `peer`. The status (200, 400, 503) and
  // the reply: GET /config's document with "changed": [the keys whose value
  // changed], or one line.
  int post(const std::string& body, const std::string& peer, std::string* reply);

 private:
  const Post post_;
  const Apply apply_;
  const std::chrono::milliseconds wait_;
  mutable std::mutex mutex_;
  LiveSettings current_;  // as last applied on the asio thread
};

}  // namespace xpu_timer::supervisor
