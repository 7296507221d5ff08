#include "inject/python_script.h"

#include <cstdarg>
#include <cstdio>

namespace xpu_timer::inject {

ScriptBuffer::ScriptBuffer(char* out, size_t size) : out_(out), size_(size) {
  if (size_ > 0) out_[0] = '\0';
}

bool ScriptBuffer::add(const char* fmt, ...) {
  if (used_ >= size_) return false;
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(out_ + used_, size_ - used_, fmt, args);
  va_end(args);
  if (n < 0 || static_cast<size_t>(n) >= size_ - used_) {
    out_[used_] = '\0';
    used_ = size_;  // nothing more fits
    return false;
  }
  used_ += static_cast<size_t>(n);
  return true;
}

bool ScriptBuffer::put(char c) {
  if (used_ + 1 >= size_) {
    used_ = size_;
    return false;
  }
  out_[used_++] = c;
  out_[used_] = '\0';
  return true;
}

bool ScriptBuffer::add_bytes(const char* text) {
  static constexpr char kHex[] = "0123456789abcdef";
  if (!put('b') || !put('\'')) return false;
  for (const char* p = text; *p != '\0'; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      if (!put(static_cast<char>(c))) return false;
    } else if (!put('\\') || !put('x') || !put(kHex[c >> 4]) || !put(kHex[c & 15])) {
      return false;
    }
  }
  return put('\'');
}

}  // namespace xpu_timer::inject
