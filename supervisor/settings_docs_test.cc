// docs/usage.md against the code: its table of the supervisor's settings is
// the one options.cc prints (settings_markdown), its table of the injected
// library's settings the one inject/settings.cc prints, and its section
// "Environment" names exactly the XPU_TIMER_* variables the product reads
// (the supervisor, the injected library and its Python probes, the tools),
// so that neither a new variable nor a removed one goes unnoticed, and no
// default is written in the docs by hand.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "inject/settings.h"
#include "supervisor/options.h"

namespace xpu_timer::supervisor {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBegin =
    "<!-- supervisor settings: settings_markdown() in supervisor/options.cc -->\n";
constexpr const char* kEnd = "<!-- end of supervisor settings -->\n";
constexpr const char* kInjectBegin =
    "<!-- injected library settings: settings_markdown() in inject/settings.cc -->\n";
constexpr const char* kInjectEnd = "<!-- end of injected library settings -->\n";

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string usage_md() { return read_text(fs::path(XPU_TIMER_SOURCE_DIR) / "docs/usage.md"); }

// The text between two markers; "" when either is missing.
std::string between(const std::string& text, const std::string& begin, const std::string& end) {
  const size_t b = text.find(begin);
  if (b == std::string::npos) return "";
  const size_t e = text.find(end, b + begin.size());
  if (e == std::string::npos) return "";
  return text.substr(b + begin.size(), e - b - begin.size());
}

std::set<std::string> variables_in(const std::string& text, const std::regex& re) {
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

// Every XPU_TIMER_* name written as a string literal in the product's C++
// and Python: not tests, test support (anything that includes gtest),
// benchmarks, fuzzers or example plugins.
std::set<std::string> variables_read() {
  static const std::regex literal(R"re(["'](XPU_TIMER_[A-Z0-9_]+)["'])re");
  static const std::regex not_product(R"(/(tests?|bench|testdata|fuzz|examples)/|_test\.)");
  std::set<std::string> names;
  const fs::path root(XPU_TIMER_SOURCE_DIR);
  for (const char* dir :
       {"common", "inject", "supervisor", "stack", "timeline", "flamegraph", "replay", "plugins"}) {
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(root / dir)) {
      const std::string path = e.path().generic_string();
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".py")) continue;
      if (std::regex_search(path, not_product)) {
        continue;
      }
      const std::string text = read_text(e.path());
      if (text.find("gtest/gtest.h") != std::string::npos) continue;
      const std::set<std::string> found = variables_in(text, literal);
      names.insert(found.begin(), found.end());
    }
  }
  return names;
}

TEST(SettingsDocs, TheSupervisorsTableIsTheOneOptionsPrints) {
  const std::string table = between(usage_md(), kBegin, kEnd);
  EXPECT_EQ(table, settings_markdown()) << "docs/usage.md must hold, between\n"
                                        << kBegin << "and\n"
                                        << kEnd << "exactly:\n"
                                        << settings_markdown();
}

TEST(SettingsDocs, TheInjectedLibrarysTableIsTheOneItsSettingsPrint) {
  const std::string table = between(usage_md(), kInjectBegin, kInjectEnd);
  EXPECT_EQ(table, inject::settings_markdown()) << "docs/usage.md must hold, between\n"
                                                << kInjectBegin << "and\n"
                                                << kInjectEnd << "exactly:\n"
                                                << inject::settings_markdown();
}

TEST(SettingsDocs, TheEnvironmentTableNamesEveryVariableReadAndNoOther) {
  const std::string md = usage_md();
  static const std::regex name(R"((XPU_TIMER_[A-Z0-9_]+))");
  // The supervisor's settings, and the first column of the tables of the
  // section "Environment" (the injected library's settings among them).
  std::set<std::string> documented = variables_in(between(md, kBegin, kEnd), name);
  const std::string environment = between(md, "## Environment\n", "\n## ");
  ASSERT_FALSE(environment.empty()) << "docs/usage.md lost its section \"Environment\"";
  static const std::regex first_cell(R"(\n\| ([^|]*) \|)");
  for (auto it = std::sregex_iterator(environment.begin(), environment.end(), first_cell);
       it != std::sregex_iterator(); ++it) {
    const std::set<std::string> cell = variables_in((*it)[1], name);
    documented.insert(cell.begin(), cell.end());
  }
  const std::set<std::string> read = variables_read();
  ASSERT_GT(read.size(), 20u) << "the scan of the sources found almost nothing";
  for (const std::string& v : read) {
    EXPECT_EQ(documented.count(v), 1u) << v << " is read but not in docs/usage.md \"Environment\"";
  }
  for (const std::string& v : documented) {
    EXPECT_EQ(read.count(v), 1u) << v << " is in docs/usage.md but nothing reads it";
  }
}

}  // namespace
}  // namespace xpu_timer::supervisor
