// The three merged views of a dump and the kinds of frame they hold: what the
// merge, the colours and the output files agree on.
#pragma once

#include <cstdint>

namespace xpu_timer::flamegraph {

// Where a frame comes from; decides its colour together with its text.
enum class FrameKind : uint8_t { kState, kNative, kPython };

// The three merged views the viewer writes: from a stack file's native,
// python and mixed frames.
enum class View : uint8_t { kCpp = 0, kPy = 1, kMixed = 2 };
constexpr int kViewCount = 3;

// "cpp", "py", "mixed": the prefix of the output files (`cpp_stack`, ...).
inline const char* view_name(View view) {
  switch (view) {
    case View::kCpp:
      return "cpp";
    case View::kPy:
      return "py";
    case View::kMixed:
      return "mixed";
  }
  return "?";
}

}  // namespace xpu_timer::flamegraph
