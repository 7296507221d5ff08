#include "tests/integration/process_harness.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace xpu_timer::testing {
namespace {

// The folders the running test made (make_temp_dir), removed once it passed.
std::vector<std::string>& made_by_this_test() {
  static std::vector<std::string> dirs;
  return dirs;
}

class RemoveDirsOfPassedTests : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    std::vector<std::string> dirs;
    dirs.swap(made_by_this_test());
    if (!info.result()->Passed() || std::getenv("XPU_TIMER_KEEP_TEST_DIRS") != nullptr) return;
    for (const std::string& d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);  // best effort: a leftover folder harms nothing
    }
  }
};

void listen_once() {
  static const bool added = [] {
    ::testing::UnitTest::GetInstance()->listeners().Append(new RemoveDirsOfPassedTests);
    return true;
  }();
  (void)added;
}

}  // namespace

std::string build_dir() { return XPU_TIMER_TEST_BUILD_DIR; }
std::string source_dir() { return XPU_TIMER_TEST_SOURCE_DIR; }

std::string make_temp_dir(const std::string& name) {
  std::string tmpl = build_dir() + "/test-tmp";
  ::mkdir(tmpl.c_str(), 0755);
  tmpl += "/" + name + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    return tmpl;
  }
  listen_once();
  made_by_this_test().push_back(tmpl);
  return tmpl;
}

}  // namespace xpu_timer::testing
