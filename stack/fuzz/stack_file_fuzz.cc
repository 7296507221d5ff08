// libFuzzer entry for the stack-file reader: any input must either decode or
// give an error line, never crash, hang or leak (ASan/UBSan in the same build).
// Run: stack_file_fuzz -max_total_time=60 <corpus dir>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "stack/stack_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  const auto stack = xpu_timer::stack::parse_stack_file(
      std::string_view(reinterpret_cast<const char*>(data), size), &error);
  if (!stack && error.empty()) __builtin_trap();  // a failure must always say why
  return 0;
}
