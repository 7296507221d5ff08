#include "flamegraph/progress_bar.h"

#include <unistd.h>

namespace xpu_timer::flamegraph {
namespace {
constexpr int kBarWidth = 40;
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);

void write_stderr(const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(STDERR_FILENO, s.data() + done, s.size() - done);
    if (n <= 0) return;  // stderr closed or full: progress is best effort
    done += static_cast<size_t>(n);
  }
}
}  // namespace

ProgressBar::ProgressBar(bool enabled, std::string what)
    : enabled_(enabled), what_(std::move(what)) {}

ProgressBar::~ProgressBar() {
  if (drawn_) write_stderr("\n");
}

void ProgressBar::update(size_t done, size_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  // Always draw the first and the last state; in between, throttle.
  if (drawn_ && done < total && now - last_ < kRedrawEvery) return;
  last_ = now;
  draw(done, total);
}

void ProgressBar::draw(size_t done, size_t total) {
  const size_t filled = total == 0 ? kBarWidth : done * kBarWidth / total;
  std::string line = "\r[";
  line.append(filled, '#');
  line.append(kBarWidth - filled, '.');
  line += "] " + std::to_string(done) + "/" + std::to_string(total) + " " + what_;
  write_stderr(line);
  drawn_ = true;
}

bool stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace xpu_timer::flamegraph
