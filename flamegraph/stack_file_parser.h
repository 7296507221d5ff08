// Decodes the text of one `.stacktrace` file. The input is untrusted (files are
// copied between nodes, may be truncated by a full disk, or not be ours at all):
// every problem comes back as one line naming the JSON field and what is wrong,
// never as an exception or a crash. Any thread; no shared state.
#pragma once

#include <string>
#include <string_view>

#include "flamegraph/stack_file.h"

namespace xpu_timer::flamegraph {

// The only format version this viewer reads.
constexpr int kStackFileVersion = 1;
// Larger world sizes are taken as corrupt numbers, not as jobs.
constexpr long long kMaxWorldSize = 1 << 20;

// On success fills *out (out->path is left untouched) and returns true; on
// failure returns false with *error set to e.g.
// "threads[3].native[2].func: expected a string, got number".
bool parse_stack_file(std::string_view text, StackFile* out, std::string* error);

}  // namespace xpu_timer::flamegraph
