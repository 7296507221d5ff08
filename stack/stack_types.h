// The data model of one process's stacks, shared by the collector, the stack
// file writer and reader (stack_file.h), the CLI and the flame-graph merge.
// Plain values: built on the collecting or the decoding thread, read anywhere
// afterwards.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xpu_timer::stack {

// One native frame, innermost first. An inlined function gets its own frame
// with the same pc and inlined=true, placed before the physical frame.
struct NativeFrame {
  uint64_t pc = 0;          // as unwound (a return address for non-activation frames)
  std::string func = "??";  // demangled; "??" if unknown
  std::string module;       // path of the mapped file; empty if none
  uint64_t offset = 0;      // pc - module load base
  std::string file;         // source file; empty if no debug info
  int line = 0;             // 0 if unknown
  bool inlined = false;
};

struct PythonFrame {
  std::string func;
  std::string file;
  int line = 0;
  // True for the outermost Python frame run by one native
  // _PyEval_EvalFrameDefault activation (3.8-3.10: every frame; 3.11+: the
  // entry frame). Used to splice Python frames into the native stack.
  bool entry = true;
};

struct MixedFrame {
  bool python = false;
  std::string func;
  std::string module;  // native only
  std::string file;    // python file, or native source file
  int line = 0;
};

struct ThreadStack {
  pid_t tid = 0;
  std::string name;
  char state = '?';               // from /proc/PID/task/TID/stat before we stopped it
  std::optional<bool> holds_gil;  // nullopt: not a Python process, or unknown
  std::vector<NativeFrame> native;
  std::vector<PythonFrame> python;
  std::vector<MixedFrame> mixed;
};

struct ProcessStack {
  int version = 1;
  int rank = 0;
  int world_size = 1;
  pid_t pid = 0;
  std::string host;
  std::string process_state;  // "S (sleeping)"
  double collected_at = 0;    // unix seconds
  double stopped_ms = 0;      // how long the process was stopped by us
  std::optional<std::string> python_version;
  std::vector<std::string> errors;   // one clear line per problem (partial result)
  std::vector<ThreadStack> threads;  // the main thread first, then by tid
};

}  // namespace xpu_timer::stack
