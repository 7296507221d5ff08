#include "flamegraph/test_folder.h"

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace xpu_timer::flamegraph {

TestFolder::TestFolder() {
  char tmpl[] = "/tmp/flamegraph_test.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TestFolder::~TestFolder() {
  const std::string cmd = "rm -rf '" + path_ + "'";
  if (std::system(cmd.c_str()) != 0) {
    // Leaves a folder in /tmp: harmless, nothing to report from a destructor.
  }
}

std::string TestFolder::write(const std::string& name, const std::string& content) const {
  const std::string p = path_ + "/" + name;
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

std::string TestFolder::read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace xpu_timer::flamegraph
