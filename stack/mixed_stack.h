// Splices Python frames into a native stack: every native activation of
// _PyEval_EvalFrameDefault (with its inlined parts and .cold clone) is
// replaced by the Python frames it was running. Pure function.
#pragma once

#include <string>
#include <vector>

#include "stack/stack_types.h"

namespace xpu_timer::stack {

// True for the interpreter loop's function names ("_PyEval_EvalFrameDefault",
// "_PyEval_EvalFrameDefault.cold").
bool is_eval_frame_function(const std::string& func);

// Both inputs innermost first. Python frames are grouped by their `entry`
// flag (a group ends at an entry frame); group k replaces the k-th eval
// activation from the top. Groups left over (native unwinding stopped early)
// are appended at the outer end; eval activations with no group left stay
// native.
std::vector<MixedFrame> build_mixed_stack(const std::vector<NativeFrame>& native,
                                          const std::vector<PythonFrame>& python);

}  // namespace xpu_timer::stack
