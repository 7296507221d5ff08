// A place in a rank's code as the verdicts name it: where a culprit rank (a
// missing, unresponsive, stalled or odd one) was when its stacks were taken
// for the verdict (docs/architecture.md "Hang detection"). The stack files
// hold every frame; a verdict keeps only the innermost frame that is the
// user's and its caller (stack/user_frames.h picks them), so that it fits a
// log line, a node document and a Prometheus label. Plain values and pure
// functions, any thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace xpu_timer {

struct CodeFrame {
  std::string function;  // "train_step", "stuck_in_host_code"
  // The Python file, the native source file, or (native frame without debug
  // information) the module's path; "" when unknown.
  std::string file;
  int line = 0;  // 0: unknown
  bool python = false;
};

// A location: the user's frame, then its caller (innermost first).
constexpr size_t kMaxWhereFrames = 2;
// Longer names and paths are cut: locations travel between nodes and end in
// log lines and metric labels.
constexpr size_t kMaxCodeFrameText = 200;

// `frames` cut to kMaxWhereFrames frames of at most kMaxCodeFrameText bytes,
// control characters replaced by '?' (the text came from another process or
// host); a negative line reads as unknown.
std::vector<CodeFrame> bounded_where(std::vector<CodeFrame> frames);

// "stuck_in_host_code (sim_trainer.py:181) <- train_step (sim_trainer.py:226)":
// each frame's file by its base name (the JSON keeps the path), "" for none.
std::string where_phrase(const std::vector<CodeFrame>& frames);

bool operator==(const CodeFrame& a, const CodeFrame& b);

}  // namespace xpu_timer
