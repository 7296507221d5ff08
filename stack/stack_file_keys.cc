#include "stack/stack_file_keys.h"

namespace xpu_timer::stack {

FileKey stack_file_key(const std::string& k) {
  // Called for every key of the file: a switch on the length keeps it to one
  // or two short compares (a hash map here cost 10% of the decoding).
  switch (k.size()) {
    case 2:
      if (k == "pc") return FileKey::kPc;
      break;
    case 3:
      if (k == "pid") return FileKey::kPid;
      if (k == "tid") return FileKey::kTid;
      break;
    case 4:
      if (k == "func") return FileKey::kFunc;
      if (k == "file") return FileKey::kFile;
      if (k == "line") return FileKey::kLine;
      if (k == "kind") return FileKey::kKind;
      if (k == "name") return FileKey::kName;
      if (k == "rank") return FileKey::kRank;
      if (k == "host") return FileKey::kHost;
      break;
    case 5:
      if (k == "mixed") return FileKey::kMixed;
      if (k == "state") return FileKey::kState;
      break;
    case 6:
      if (k == "module") return FileKey::kModule;
      if (k == "offset") return FileKey::kOffset;
      if (k == "native") return FileKey::kNative;
      if (k == "python") return FileKey::kPython;
      if (k == "errors") return FileKey::kErrors;
      break;
    case 7:
      if (k == "inlined") return FileKey::kInlined;
      if (k == "threads") return FileKey::kThreads;
      if (k == "version") return FileKey::kVersion;
      break;
    case 9:
      if (k == "holds_gil") return FileKey::kHoldsGil;
      break;
    case 10:
      if (k == "world_size") return FileKey::kWorldSize;
      if (k == "stopped_ms") return FileKey::kStoppedMs;
      break;
    case 12:
      if (k == "collected_at") return FileKey::kCollectedAt;
      break;
    case 13:
      if (k == "process_state") return FileKey::kProcessState;
      break;
    case 14:
      if (k == "python_version") return FileKey::kPythonVersion;
      break;
    default:
      break;
  }
  return FileKey::kOther;
}

}  // namespace xpu_timer::stack
