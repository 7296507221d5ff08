// Colour families of flame-graph frames (docs/architecture.md "Merged stacks"):
// cyan Python/CPython, green torch/NCCL/CUDA, yellow C++, red C/system,
// purple process state. Decided from the frame's kind and its `func@source`
// label, checked in that order: state; Python frames; GPU/torch libraries by
// module or by name prefix; CPython by module (libpython*, python3*) or name
// (_Py*, Py*); C++ by a `::` in the demangled name; anything else is C/system.
#pragma once

#include <string>
#include <string_view>

#include "flamegraph/stack_view.h"

namespace xpu_timer::flamegraph {

enum class FrameCategory { kPython, kGpu, kCpp, kSystem, kState };

// `label` is `func@source` (no rank sets).
FrameCategory classify_frame(FrameKind kind, std::string_view label);

// Short name used in the SVG's data attributes and tests: "py", "gpu", "cpp", "sys", "state".
const char* category_name(FrameCategory category);

// "rgb(r,g,b)" within the category's hue; `label` varies the shade so that
// neighbouring frames are told apart, deterministically.
std::string frame_colour(FrameCategory category, std::string_view label);

// Our own folded background threads are grey.
constexpr char kOwnThreadFill[] = "rgb(190,190,190)";

// The fill of a frame of the graphs: its category's colour, grey for our own
// folded background threads (own_threads.h).
std::string frame_fill(FrameKind kind, std::string_view label);

}  // namespace xpu_timer::flamegraph
