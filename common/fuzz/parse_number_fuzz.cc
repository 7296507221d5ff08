// libFuzzer entry for the integer parser (common/parse_number.h), which reads
// settings, command lines, /proc files and the keys of documents written by
// others. The input is the text. What is accepted must print back to the
// same digits (less leading zeros and a "-0"'s sign), so nothing is accepted
// that is not a number and no number is misread; the prefix form must take
// exactly what the whole form would take of the same characters. A real
// number accepted is finite, written only with digits, '-', '.' and an
// exponent, and reads back the same from its shortest printed form.
// Seeds: common/fuzz/corpus/parse_number_fuzz/.
// Run: parse_number_fuzz -max_total_time=60 [corpus dir]
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "common/parse_number.h"

namespace {

// The canonical decimal form of an accepted text: its sign (never for zero)
// and its digits without leading zeros.
std::string canonical(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  while (text.size() > 1 && text.front() == '0') text.remove_prefix(1);
  return (negative && text != "0" ? "-" : "") + std::string(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto v = xpu_timer::parse_int(text)) {
    if (std::to_string(*v) != canonical(text)) __builtin_trap();
  }
  if (const auto v = xpu_timer::parse_uint(text)) {
    if (std::to_string(*v) != canonical(text)) __builtin_trap();
  }
  if (const auto v = xpu_timer::parse_real(text)) {
    if (!std::isfinite(*v)) __builtin_trap();
    // Digits, a sign, a point and an exponent with its own sign (from_chars takes "1e+3").
    if (text.find_first_not_of("0123456789-+.eE") != std::string_view::npos) __builtin_trap();
    char printed[40];
    std::snprintf(printed, sizeof(printed), "%.17g", *v);
    if (xpu_timer::parse_real(printed) != v) __builtin_trap();
  }
  std::string_view rest = text;
  const auto taken = xpu_timer::take_int(&rest);
  if (taken.has_value() != (rest.size() < text.size())) __builtin_trap();
  if (taken) {
    const std::string_view digits = text.substr(0, text.size() - rest.size());
    if (xpu_timer::parse_int(digits) != taken) __builtin_trap();
    // It stopped at the first character that is no digit.
    if (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') __builtin_trap();
  }
  return 0;
}
