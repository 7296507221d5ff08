// The one number parser of the product: settings, command lines, /proc
// files, document keys. Built on std::from_chars: no allocation, no locale,
// no errno, so the injected library may call it anywhere, signal handlers
// included.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace xpu_timer {

// The whole of `text` is one decimal integer in [min, max]: an optional '-'
// then digits, nothing before or after (no spaces, no '+', no "0x").
// nullopt when empty, when anything else is there, on overflow, or out of
// range.
std::optional<int64_t> parse_int(std::string_view text,
                                 int64_t min = std::numeric_limits<int64_t>::min(),
                                 int64_t max = std::numeric_limits<int64_t>::max());

// The whole of `text` is one finite decimal number in [min, max]: an
// optional '-', digits with an optional '.' and fraction, an optional
// exponent ("2.5", "-1e3", ".5"). nullopt for anything else: empty, spaces,
// '+', "0x", "inf", "nan", out of range. Unlike strtod it ignores the
// locale, whose decimal point a user's program may have changed.
std::optional<double> parse_real(std::string_view text,
                                 double min = std::numeric_limits<double>::lowest(),
                                 double max = std::numeric_limits<double>::max());

// The whole of `text` is one unsigned integer in `base` (10 or 16, lower or
// upper case digits, no "0x"), at most UINT64_MAX: a communicator's hash.
std::optional<uint64_t> parse_uint(std::string_view text, int base = 10);

// The integer at the start of *text, for fields followed by more (a /proc
// stat line, "8(x2)"): an optional '-' then digits; *text is advanced past
// it. nullopt, *text unchanged, when it starts with no digit or overflows.
std::optional<int64_t> take_int(std::string_view* text);
std::optional<uint64_t> take_uint(std::string_view* text);

}  // namespace xpu_timer
