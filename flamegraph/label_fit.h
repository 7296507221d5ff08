// How a frame's `func@source` text is shortened to a number of characters,
// so that what is left still says where the frame is: the source is shortened
// first (".../dir/file.py:88", then ".../file.py:88"; "libnccl.so.2:enqueue.cc:12"
// to "enqueue.cc:12"), then the function is cut with "..", then the source is
// shown alone, and at last only its tail: the line number is never the part
// cut away. The SVG's script applies the
// same rule when zooming (svg_script.cc, fitParts), so both count characters
// (UTF-8 code points here, UTF-16 units there: the same for the ASCII of
// symbol names and paths). Pure functions, any thread.
#pragma once

#include <string>
#include <string_view>

namespace xpu_timer::flamegraph {

// "func@source" split at its last '@' (a C++ name may hold one, a source
// never does); source is empty when there is no '@'.
struct LabelParts {
  std::string_view func;
  std::string_view source;
};
LabelParts split_label(std::string_view label);

struct FittedLabel {
  std::string func;    // empty: the function did not fit at all
  std::string source;  // empty only when not even ".." and a digit fit
};

// The label in at most `max_chars` characters, `separator_chars` of them
// taken by what the caller puts between and around the two parts.
FittedLabel fit_label(std::string_view func, std::string_view source, long max_chars,
                      long separator_chars);

// "func@source" fitted as above; the parts joined by '@' (the source alone
// when the function was dropped). A source without a line number (a module
// without debug information) protects nothing: the text is clipped at its
// end, so the function is what stays.
std::string fit_frame_label(std::string_view label, long max_chars);

// Plain text (no source to keep) in at most `max_chars` characters: clipped
// at the end with "..".
std::string clip_text(std::string_view text, long max_chars);

// True when `source` ends in ":<digits>".
bool has_line_number(std::string_view source);

// Characters (UTF-8 code points) of `text`.
long char_count(std::string_view text);

}  // namespace xpu_timer::flamegraph
