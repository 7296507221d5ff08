// Human-readable dump of a ProcessStack, in the spirit of `py-spy dump`:
// one block per thread, "Thread TID (name) [holds GIL]", then its frames.
#pragma once

#include <string>

#include "stack/stack_types.h"

namespace xpu_timer::stack {

enum class TextView { kMixed, kNativeOnly, kPythonOnly };

std::string format_stack_text(const ProcessStack& stack, TextView view);

}  // namespace xpu_timer::stack
