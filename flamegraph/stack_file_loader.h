// Loads the stack files of a dump folder for the merge. Files are read and
// decoded (stack::load_stack_file, the one reader of the format) on worker
// threads, JSON parsing being most of the viewer's time, and handed to the
// caller's sink on the calling thread, in the order given, through a bounded
// window so that a 1024-rank dump is never held in memory at once. A file that
// cannot be read or decoded is reported as one LoadProblem and skipped.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "stack/stack_file.h"

namespace xpu_timer::flamegraph {

struct LoadProblem {
  std::string path;
  std::string message;  // "<path>: not valid JSON: ... unexpected end of input"
};

struct LoadOptions {
  unsigned threads = 2;                               // decoding workers; 0 = one per core
  size_t max_file_bytes = stack::kMaxStackFileBytes;  // larger files are refused, not read
  // Called on the calling thread after each file (loaded or skipped).
  std::function<void(size_t done, size_t total)> on_progress;
};

struct LoadSummary {
  size_t loaded = 0;
  std::vector<LoadProblem> problems;
};

// Loads `paths` and calls sink(path, stack) for each decoded one, in the order
// of paths. `stack` is valid only during the call (its memory is decoded into again).
LoadSummary load_stack_files(
    const std::vector<std::string>& paths, const LoadOptions& options,
    const std::function<void(const std::string& path, const stack::ProcessStack& stack)>& sink);

}  // namespace xpu_timer::flamegraph
