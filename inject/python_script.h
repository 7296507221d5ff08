// A Python script built in a caller's fixed buffer: the library's scripts
// (python_probes.py, crash_excepthook.py) followed by the call that runs
// them with their values. No allocation: built inside the first hooked call.
// One thread at a time per buffer.
#pragma once

#include <cstddef>

namespace xpu_timer::inject {

class ScriptBuffer {
 public:
  ScriptBuffer(char* out, size_t size);

  // Appends printf-style text. False when it does not fit (the text so far
  // stays NUL-terminated; the script must then not be run).
  bool add(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  // Appends `text` as a Python bytes literal, b'...': every byte that is not
  // printable ASCII, a quote or a backslash as \xHH, so that any value (a
  // path, a list the user wrote) reaches the script unchanged and cannot end
  // the literal. False when it does not fit.
  bool add_bytes(const char* text);

 private:
  bool put(char c);

  char* out_;
  size_t size_;
  size_t used_ = 0;
};

}  // namespace xpu_timer::inject
