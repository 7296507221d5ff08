// A real viewer loads the trace: speedscope (npm package, its static build
// under dist/release) imports the Trace Event JSON in headless Chromium, the
// way its own CLI opens a file (a script calling
// speedscope.loadFileFromBase64, named in #localProfilePath=). The DOM it
// dumps must list one profile per (rank, track) with the GPU time speedscope
// summed for it, and name our slices in its sandwich view: the file parsed,
// every track was understood, and durations came through in microseconds.
// Skipped, saying why, where chromium or speedscope is missing
// (scripts/install_deps.sh, run by `make test`, installs both).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>

#include "timeline/test_dumps.h"
#include "timeline/trace_builder.h"

namespace xpu_timer::timeline {
namespace {

using testing::TempDir;

constexpr char kChromium[] = "/usr/bin/chromium";

// speedscope's static build: $XPU_TIMER_SPEEDSCOPE_DIR, else where
// `npm install -g speedscope` put it (`npm root -g`, where install_deps.sh
// installs it, or the usual prefixes /usr and /usr/local).
std::string find_speedscope() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("XPU_TIMER_SPEEDSCOPE_DIR")) dirs.push_back(env);
  if (FILE* npm = ::popen("npm root -g 2>/dev/null", "r")) {
    char line[4096] = {};
    if (std::fgets(line, sizeof(line), npm) != nullptr) {
      std::string root(line);
      while (!root.empty() && (root.back() == '\n' || root.back() == '\r')) root.pop_back();
      if (!root.empty()) dirs.push_back(root + "/speedscope");
    }
    ::pclose(npm);
  }
  dirs.push_back("/usr/lib/node_modules/speedscope");
  dirs.push_back("/usr/local/lib/node_modules/speedscope");
  for (const std::string& d : dirs) {
    const std::string index = d + "/dist/release/index.html";
    if (::access(index.c_str(), R_OK) == 0) return index;
  }
  return "";
}

std::string base64(const std::string& in) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += std::string{kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out +=
        std::string{kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}

// The visible text of a DOM dump, one '|' between elements.
std::string dom_text(const std::string& dom) {
  std::string t = std::regex_replace(dom, std::regex("<(style|script)[^>]*>[^<]*</\\1>"), "");
  t = std::regex_replace(t, std::regex("<[^>]*>"), "|");
  return std::regex_replace(t, std::regex("\\|[\\s|]*\\|"), "|");
}

TEST(Speedscope, LoadsTheTraceWithOneProfilePerTrack) {
  if (::access(kChromium, X_OK) != 0) {
    GTEST_SKIP() << kChromium << " not installed (Debian package chromium): viewer test skipped";
  }
  const std::string index = find_speedscope();
  if (index.empty()) {
    GTEST_SKIP() << "speedscope not installed (npm install -g speedscope@1.25.0, or set "
                    "XPU_TIMER_SPEEDSCOPE_DIR): viewer test skipped";
  }
  TempDir dir;
  testing::write_job(dir.path(), testing::JobSpec{}, /*with_hang_json=*/true);
  LoadedDumps dumps;
  load_dumps({DumpSource{dir.path(), -1}}, &dumps);
  std::vector<std::string> warnings;
  const std::string trace = build_trace(dumps, TraceOptions{}, &warnings).dump();
  const std::string loader = dir.write(
      "load.js", "speedscope.loadFileFromBase64(\"timeline.json\", \"" + base64(trace) + "\")");
  const std::string url = "'file://" + index + "#localProfilePath=" + loader + "&view=sandwich'";
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
      " --disable-component-update --disable-sync --virtual-time-budget=10000 --user-data-dir=";
  const std::string cmd = "timeout 120 " + std::string(kChromium) + flags + dir.path() +
                          "/profile --dump-dom " + url + " > " + dir.path() + "/dom.html 2> " +
                          dir.path() + "/chromium.log";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << TempDir::read(dir.path() + "/chromium.log");
  const std::string text = dom_text(TempDir::read(dir.path() + "/dom.html"));

  EXPECT_EQ(text.find("Something went wrong"), std::string::npos) << text;
  ASSERT_NE(text.find("|timeline.json - speedscope|"), std::string::npos) << text.substr(0, 2000);
  // 4 ranks x 2 streams: the sampled-out GEMMs are a counter, which
  // speedscope does not draw, so no host track with them.
  EXPECT_NE(text.find("|(1/8)|"), std::string::npos) << text.substr(0, 2000);
  // Each profile with the time speedscope summed: 6 GEMMs of 100 us; on the
  // comm stream 5 AllReduces of 200 us, plus the STUCK one up to the verdict
  // 5.5 s later except on rank 2, the missing rank. Each process named with
  // its role.
  for (int r = 0; r < 4; ++r) {
    const std::string rank = "rank " + std::to_string(r) +
                             (r == 2 ? " - MISSING" : " - stuck in AllReduce #6") + " (pid " +
                             std::to_string(r + 1) + "), ";
    const std::string gpu = "GPU" + std::to_string(r) + " stream ";
    for (const std::string& expected :
         {rank + gpu + "0x7f00a0001000 (tid 2)|600.00µs|",
          rank + gpu + "0x7f00a0002000 (tid 3)|" + (r == 2 ? "1.00ms|" : "5.49s|")}) {
      EXPECT_NE(text.find("|" + expected), std::string::npos) << expected << "\n" << text;
    }
  }
  // The sandwich view of the first profile (rank 0's compute stream) names
  // the GEMMs by dtype and shape, with their args.
  EXPECT_NE(text.find("|GemmEx bf16 4096x4096x1024 {\"batch\":1,"), std::string::npos) << text;

  if (const char* shots = std::getenv("XPU_TIMER_SCREENSHOT_DIR")) {
    const std::string shot = "timeout 120 " + std::string(kChromium) + flags + dir.path() +
                             "/profile2 --window-size=1400,800 --screenshot=" + shots +
                             "/speedscope_timeline.png 'file://" + index +
                             "#localProfilePath=" + loader + "' 2>/dev/null";
    EXPECT_EQ(std::system(shot.c_str()), 0);
  }
}

}  // namespace
}  // namespace xpu_timer::timeline
