#include "supervisor/live_config.h"

#include <condition_variable>
#include <cstdio>
#include <memory>

#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {
namespace {

// Each live setting: its key in the JSON, the row of options.cc's table that
// gives its range and parses it (set_setting), and where it is kept.
struct LiveKey {
  const char* key;
  const char* flag;
  double LiveSettings::*live;  // nullptr: on_hang
  double Options::*option;
};
constexpr LiveKey kKeys[] = {
    {"hang_timeout_s", "--hang-timeout", &LiveSettings::hang_timeout_s, &Options::hang_timeout_s},
    {"stall_factor", "--stall-factor", &LiveSettings::stall_factor, &Options::stall_factor},
    {"slow_window_s", "--slow-window", &LiveSettings::slow_window_s, &Options::slow_window_s},
    {"on_hang", "--on-hang", nullptr, nullptr},
};

const LiveKey* find_key(const std::string& key) {
  for (const LiveKey& k : kKeys) {
    if (key == k.key) return &k;
  }
  return nullptr;
}

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.15g", v);
  return text;
}

std::string shown_value(const LiveKey& k, const LiveSettings& s) {
  if (k.live == nullptr) return s.on_hang == OnHang::kKill ? "kill" : "keep";
  return number_text(s.*k.live);
}

// Checks `value` of `k` with the command line's own parser; "" or the error.
std::string check(const LiveKey& k, const nlohmann::json& value, LiveSettings* out) {
  const SettingRange range = *setting_range(k.flag);
  const bool typed = k.live == nullptr ? value.is_string() : value.is_number();
  if (!typed) return std::string(k.key) + " must be " + range.expects + ", got " + value.dump();
  Options scratch;
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  if (std::string why = set_setting(k.flag, k.key, text, &scratch); !why.empty()) return why;
  if (k.live == nullptr) {
    out->on_hang = scratch.on_hang;
  } else {
    out->*k.live = scratch.*k.option;
  }
  return "";
}

// A key as an error line shows it: printable, bounded.
std::string printable_key(const std::string& key) {
  std::string s = key.substr(0, 80);
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return key.size() > 80 ? s + "..." : s;
}

std::string key_list() {
  std::string s;
  for (const LiveKey& k : kKeys) s += std::string(s.empty() ? "" : ", ") + k.key;
  return s;
}

}  // namespace

LiveSettings live_settings(const Options& o) {
  return LiveSettings{o.hang_timeout_s, o.stall_factor, o.slow_window_s, o.on_hang};
}

bool parse_config_change(const std::string& body, ConfigChange* change, std::string* error) {
  *change = ConfigChange{};
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    *error =
        "POST /config takes a JSON object of settings, e.g. {\"hang_timeout_s\": 120}; "
        "settable: " +
        key_list();
    return false;
  }
  std::string errors;
  const auto add = [&](const std::string& e) { errors += (errors.empty() ? "" : "; ") + e; };
  for (const auto& [key, value] : doc.items()) {
    if (find_key(key) == nullptr) {
      add("unknown setting '" + printable_key(key) + "' (settable: " + key_list() + ")");
    }
  }
  for (const LiveKey& k : kKeys) {  // in the table's order, as the log says them
    const auto it = doc.find(k.key);
    if (it == doc.end()) continue;
    if (std::string why = check(k, *it, &change->values); !why.empty()) {
      add(why);
      continue;
    }
    change->keys.push_back(k.key);
  }
  if (errors.empty()) return true;
  *error = errors + "; nothing changed";
  return false;
}

std::vector<std::string> apply_config_change(const ConfigChange& change, LiveSettings* settings) {
  std::vector<std::string> lines;
  for (const std::string& key : change.keys) {
    const LiveKey& k = *find_key(key);
    const std::string before = shown_value(k, *settings);
    if (k.live == nullptr) {
      settings->on_hang = change.values.on_hang;
    } else {
      settings->*k.live = change.values.*k.live;
    }
    const std::string after = shown_value(k, *settings);
    if (after != before) lines.push_back(key + " " + before + " -> " + after);
  }
  return lines;
}

nlohmann::json config_json(const LiveSettings& settings) {
  nlohmann::json doc = nlohmann::json::object();
  nlohmann::json ranges = nlohmann::json::object();
  for (const LiveKey& k : kKeys) {
    const SettingRange r = *setting_range(k.flag);
    if (k.live == nullptr) {
      doc[k.key] = shown_value(k, settings);
      ranges[k.key] = {{"choices", {r.first, r.second}}, {"expects", r.expects}};
    } else {
      doc[k.key] = settings.*k.live;
      ranges[k.key] = {{"min", r.min}, {"max", r.max}, {"expects", r.expects}};
    }
  }
  doc["ranges"] = std::move(ranges);
  return doc;
}

LiveConfig::LiveConfig(LiveSettings initial, Post post, Apply apply, std::chrono::milliseconds wait)
    : post_(std::move(post)), apply_(std::move(apply)), wait_(wait), current_(initial) {}

std::string LiveConfig::json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return config_json(current_).dump(2);
}

int LiveConfig::post(const std::string& body, const std::string& peer, std::string* reply) {
  ConfigChange change;
  if (!parse_config_change(body, &change, reply)) return 400;
  // Shared with the asio thread's task, which may outlive this call when
  // the wait runs out (then `withdrawn` keeps it from applying).
  struct Handoff {
    std::mutex mutex;
    std::condition_variable applied_cv;
    bool applied = false;
    bool withdrawn = false;
    LiveSettings now;
    std::vector<std::string> changed;  // the keys whose value changed
  };
  auto handoff = std::make_shared<Handoff>();
  post_([this, handoff, change, peer] {
    std::lock_guard<std::mutex> lock(handoff->mutex);
    if (handoff->withdrawn) return;
    LiveSettings next;
    {
      std::lock_guard<std::mutex> current_lock(mutex_);
      next = current_;
    }
    const std::vector<std::string> lines = apply_config_change(change, &next);
    apply_(next);
    {
      std::lock_guard<std::mutex> current_lock(mutex_);
      current_ = next;
    }
    for (const std::string& line : lines) {
      handoff->changed.push_back(line.substr(0, line.find(' ')));
      SUP_LOG_INFO("config: %s (POST /config from %s)", line.c_str(), peer.c_str());
    }
    if (lines.empty()) SUP_LOG_INFO("config: no change (POST /config from %s)", peer.c_str());
    handoff->now = next;
    handoff->applied = true;
    handoff->applied_cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(handoff->mutex);
  if (!handoff->applied_cv.wait_for(lock, wait_, [&] { return handoff->applied; })) {
    handoff->withdrawn = true;
    *reply = "the supervisor's main thread did not take the change within " +
             std::to_string(wait_.count()) + " ms (is it shutting down?); nothing changed";
    return 503;
  }
  nlohmann::json doc = config_json(handoff->now);
  doc["changed"] = handoff->changed;
  *reply = doc.dump(2);
  return 200;
}

}  // namespace xpu_timer::supervisor
