#include "tests/integration/process_harness.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xpu_timer::testing {

std::string build_dir() { return XPU_TIMER_TEST_BUILD_DIR; }
std::string source_dir() { return XPU_TIMER_TEST_SOURCE_DIR; }

std::string make_temp_dir(const std::string& name) {
  std::string tmpl = build_dir() + "/test-tmp";
  ::mkdir(tmpl.c_str(), 0755);
  tmpl += "/" + name + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
  return tmpl;
}

}  // namespace xpu_timer::testing
