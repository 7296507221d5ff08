// Where a process is, in one line: the innermost frame of its main thread
// that is the user's, and that frame's caller. A verdict names its culprit
// ranks this way (common/code_frame.h) from the stack files taken for it.
//
// Which thread: the main thread (the stack file lists it first). The ranks a
// verdict blames are missing from a collective or stand still; what keeps
// them there is the training loop, which PyTorch runs on the main thread
// (collectives issued from autograd's threads are what the others wait in,
// not where the culprit is). xpu-timer's own threads are never chosen.
//
// Which frame, innermost first:
//  - a thread with Python frames: the innermost Python frame outside the
//    Python runtime's library (threading, selectors, queue, ... under
//    lib/pythonX.Y/, "<frozen ...>"), outside torch (a rank stuck in
//    torch.distributed or a DataLoader is told by the user's line that
//    called it) and outside code we run in the rank ("<string>"); when every
//    frame is such, the innermost frame;
//  - a thread without: the innermost native frame outside the C and C++
//    runtimes, the dynamic loader, the CUDA, cuBLAS and NCCL libraries and
//    libxpu_timer_inject.so, with a name; when every frame is such, the
//    innermost named frame.
// The caller is the next frame outwards, whatever it is. Pure.
#pragma once

#include <vector>

#include "common/code_frame.h"
#include "stack/stack_types.h"

namespace xpu_timer::stack {

// At most kMaxWhereFrames frames (bounded_where), innermost first; empty when
// the process has no thread with a frame.
std::vector<CodeFrame> user_frames(const ProcessStack& stack);

// Whether a Python file is the runtime's, torch's or ours, not the user's.
bool is_library_python_file(const std::string& file);
// Whether a native module (its path) is a runtime or GPU library, or ours.
bool is_library_module(const std::string& module);

}  // namespace xpu_timer::stack
