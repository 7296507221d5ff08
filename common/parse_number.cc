#include "common/parse_number.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace xpu_timer {
namespace {

// from_chars takes a '-' for a signed type and never a '+' or a space: the
// strict grammar of the header. The prefix form stops at the first non-digit.
template <typename T>
std::optional<T> take(std::string_view* text, int base) {
  T v{};
  const char* end = text->data() + text->size();
  const auto [stop, ec] = std::from_chars(text->data(), end, v, base);
  if (ec != std::errc()) return std::nullopt;
  text->remove_prefix(static_cast<size_t>(stop - text->data()));
  return v;
}

template <typename T>
std::optional<T> whole(std::string_view text, int base) {
  const std::optional<T> v = take<T>(&text, base);
  if (!v || !text.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<int64_t> parse_int(std::string_view text, int64_t min, int64_t max) {
  const std::optional<int64_t> v = whole<int64_t>(text, 10);
  if (!v || *v < min || *v > max) return std::nullopt;
  return v;
}

std::optional<double> parse_real(std::string_view text, double min, double max) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, v, std::chars_format::general);
  if (ec != std::errc() || stop != end || !std::isfinite(v) || v < min || v > max) {
    return std::nullopt;
  }
  return v;
}

std::optional<uint64_t> parse_uint(std::string_view text, int base) {
  return whole<uint64_t>(text, base);
}

std::optional<int64_t> take_int(std::string_view* text) { return take<int64_t>(text, 10); }

std::optional<uint64_t> take_uint(std::string_view* text) { return take<uint64_t>(text, 10); }

}  // namespace xpu_timer
