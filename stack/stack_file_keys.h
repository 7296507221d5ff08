// Private to the stack-file reader (stack_file_parser.cc): the keys of the
// format (stack_file.h), recognised once per key of a file instead of once per
// comparison.
#pragma once

#include <string>

namespace xpu_timer::stack {

enum class FileKey {
  kOther,
  kVersion,
  kRank,
  kWorldSize,
  kPid,
  kHost,
  kProcessState,
  kCollectedAt,
  kStoppedMs,
  kPythonVersion,
  kErrors,
  kThreads,
  kTid,
  kName,
  kState,
  kHoldsGil,
  kNative,
  kPython,
  kMixed,
  kPc,
  kFunc,
  kModule,
  kOffset,
  kFile,
  kLine,
  kInlined,
  kKind
};

// FileKey::kOther for a key the format does not have (the reader skips its value).
FileKey stack_file_key(const std::string& key);

}  // namespace xpu_timer::stack
