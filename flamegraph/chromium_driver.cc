#include "flamegraph/chromium_driver.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

namespace xpu_timer::flamegraph {
namespace {

// Flags that keep headless Chromium off the network and quiet.
constexpr char kHeadless[] =
    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
    " --disable-background-networking --disable-component-update --disable-sync"
    " --hide-scrollbars";

std::string fresh_profile(const TestFolder& dir) {
  static int calls = 0;
  return dir.path() + "/chromium-profile-" + std::to_string(++calls);
}

bool run(const std::string& cmd, const std::string& log) {
  if (std::system(cmd.c_str()) == 0) return true;
  ADD_FAILURE() << "chromium failed: " << cmd << "\n" << TestFolder::read(log);
  return false;
}

}  // namespace

bool chromium_available() { return ::access(kChromium, X_OK) == 0; }

std::string chromium_dom(const TestFolder& dir, const std::string& url, const std::string& flags) {
  const std::string profile = fresh_profile(dir);
  const std::string out = profile + ".dom", log = profile + ".log";
  const std::string cmd = "timeout 120 " + std::string(kChromium) + kHeadless + " " + flags +
                          " --user-data-dir=" + profile + " --dump-dom '" + url + "' > " + out +
                          " 2> " + log;
  return run(cmd, log) ? TestFolder::read(out) : "";
}

bool chromium_screenshot(const TestFolder& dir, const std::string& url, const std::string& png,
                         int width, int height, const std::string& flags) {
  const std::string profile = fresh_profile(dir);
  const std::string log = profile + ".log";
  const std::string cmd = "timeout 120 " + std::string(kChromium) + kHeadless + " " + flags +
                          " --user-data-dir=" + profile +
                          " --window-size=" + std::to_string(width) + "," + std::to_string(height) +
                          " --screenshot=" + png + " '" + url + "' > " + log + " 2>&1";
  return run(cmd, log);
}

std::pair<int, int> png_size(const std::string& path) {
  const std::string data = TestFolder::read(path);
  // Signature (8 bytes), IHDR length and type (8), then width and height, big-endian.
  if (data.size() < 24 || data.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return {0, 0};
  auto be32 = [&](size_t at) {
    int v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(data[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

std::string screenshot_dir(const std::string& component) {
  const char* env = std::getenv("XPU_TIMER_SCREENSHOT_DIR");
  const std::string dir = env != nullptr && *env != '\0'
                              ? std::string(env)
                              : std::string(XPU_TIMER_ARTIFACTS_DIR) + "/" + component;
  const std::string cmd = "mkdir -p '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "cannot create " << dir;
  return dir;
}

}  // namespace xpu_timer::flamegraph
