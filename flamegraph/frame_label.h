// Text of one merged frame before its rank sets: `func@source`. The rules decide
// which frames of different ranks merge, so they live in one place:
//  - native: source = module basename, plus `:file:line` when DWARF gave them
//    (`libnccl.so.2:enqueue.cc:12`); an unknown function is `??+0x<offset>`;
//    inlined frames get ` [inlined]` after the name;
//  - python: source = `file:line`, the file shortened after `site-packages/` or
//    `dist-packages/` so that ranks with differently located venvs still merge;
//  - process state root: `state:S (sleeping)@process`.
// ';' (the folded-format separator) and control characters in names become
// ',' and ' ', so that one frame always stays one field of a folded line.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace xpu_timer::flamegraph {

std::string native_frame_label(std::string_view func, std::string_view module,
                               std::string_view file, std::optional<long long> line,
                               std::string_view offset, bool inlined);
std::string python_frame_label(std::string_view func, std::string_view file,
                               std::optional<long long> line);
std::string state_frame_label(std::string_view process_state);

// The same into *out (cleared first), so that the loader reuses one buffer per
// file instead of allocating a string per frame.
void format_native_frame_label(std::string* out, std::string_view func, std::string_view module,
                               std::string_view file, std::optional<long long> line,
                               std::string_view offset, bool inlined);
void format_python_frame_label(std::string* out, std::string_view func, std::string_view file,
                               std::optional<long long> line);

}  // namespace xpu_timer::flamegraph
