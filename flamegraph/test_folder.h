// A temporary folder for a test, removed with its files when the test ends.
#pragma once

#include <string>

namespace xpu_timer::flamegraph {

class TestFolder {
 public:
  TestFolder();
  ~TestFolder();
  TestFolder(const TestFolder&) = delete;
  TestFolder& operator=(const TestFolder&) = delete;

  const std::string& path() const { return path_; }
  // Writes `content` (any bytes) to path()/name and returns the full path.
  std::string write(const std::string& name, const std::string& content) const;
  // Whole content of a file, "" if it cannot be read.
  static std::string read(const std::string& path);

 private:
  std::string path_;
};

}  // namespace xpu_timer::flamegraph
