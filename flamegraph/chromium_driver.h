// Headless Chromium (Debian's /usr/bin/chromium) driven from the browser
// tests: load a page, let its scripts run to the load event, and dump the DOM
// or take a screenshot. Each call gets a fresh profile folder inside the
// test's folder, so calls never share state, and a `timeout 120` so a wedged
// browser fails the test instead of hanging it. Test-only; one thread.
#pragma once

#include <string>
#include <utility>

#include "flamegraph/test_folder.h"

namespace xpu_timer::flamegraph {

constexpr char kChromium[] = "/usr/bin/chromium";

bool chromium_available();

// Skips the calling test, visibly, where Chromium is missing.
#define XPU_TIMER_SKIP_WITHOUT_CHROMIUM()                                          \
  if (!::xpu_timer::flamegraph::chromium_available())                              \
  GTEST_SKIP() << ::xpu_timer::flamegraph::kChromium                               \
               << " not installed (Debian package chromium): browser test skipped"

// The DOM of `url` after its load event; "" with a test failure (naming
// Chromium's log) when the browser fails. `flags` are added to the command
// line (e.g. "--allow-file-access-from-files" for a page with iframes).
std::string chromium_dom(const TestFolder& dir, const std::string& url,
                         const std::string& flags = "");

// A `width` x `height` screenshot of `url` into `png`; false with a test
// failure when the browser fails. `flags` as for chromium_dom (e.g.
// "--virtual-time-budget=8000" for a page that fetches its data after load).
bool chromium_screenshot(const TestFolder& dir, const std::string& url, const std::string& png,
                         int width, int height, const std::string& flags = "");

// Width and height of a PNG from its header; {0, 0} when it is not one.
std::pair<int, int> png_size(const std::string& path);

// Where the browser tests leave their screenshots: $XPU_TIMER_SCREENSHOT_DIR,
// else the build's test-artifacts/<component> folder (created).
std::string screenshot_dir(const std::string& component = "flamegraph");

}  // namespace xpu_timer::flamegraph
