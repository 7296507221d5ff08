// A one-line progress bar on stderr ("\r[#####.....] 512/1024 stack files"),
// redrawn at most every 100 ms so that it costs nothing against the merge.
// Used from one thread (the loader's calling thread).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace xpu_timer::flamegraph {

class ProgressBar {
 public:
  // Draws nothing unless `enabled`; `what` names the items ("stack files").
  ProgressBar(bool enabled, std::string what);
  ~ProgressBar();  // finishes the line if anything was drawn
  void update(size_t done, size_t total);

 private:
  void draw(size_t done, size_t total);

  bool enabled_;
  bool drawn_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point last_;
};

// True when stderr is a terminal: the viewer then shows the bar by default.
bool stderr_is_tty();

}  // namespace xpu_timer::flamegraph
