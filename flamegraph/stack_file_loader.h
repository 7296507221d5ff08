// Finds and loads the stack files of a dump folder. Files are decoded on worker
// threads (JSON parsing is most of the viewer's time) and handed to the caller's
// sink on the calling thread, in file-name order, through a bounded window so
// that a 1024-rank dump is never held in memory at once. A file that cannot be
// read or decoded is reported as one LoadProblem and skipped.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "flamegraph/stack_file.h"

namespace xpu_timer::flamegraph {

struct LoadProblem {
  std::string path;
  std::string message;  // e.g. "not valid JSON: ... unexpected end of input"
};

struct LoadOptions {
  unsigned threads = 2;                     // decoding workers; 0 = one per core
  size_t max_file_bytes = size_t{1} << 30;  // larger files are refused, not read
  // Called on the calling thread after each file (loaded or skipped).
  std::function<void(size_t done, size_t total)> on_progress;
};

struct LoadSummary {
  size_t loaded = 0;
  std::vector<LoadProblem> problems;
};

// The `*.stacktrace` regular files directly in `dir`, sorted by name. Returns
// false with *error naming the folder and errno when it cannot be listed.
bool list_stack_files(const std::string& dir, std::vector<std::string>* paths, std::string* error);

// Reads and decodes one file; *error says why not (without the path).
bool load_stack_file(const std::string& path, size_t max_file_bytes, StackFile* out,
                     std::string* error);

// Loads `paths` and calls sink(file) for each decoded one, in the order of paths.
LoadSummary load_stack_files(const std::vector<std::string>& paths, const LoadOptions& options,
                             const std::function<void(StackFile&&)>& sink);

}  // namespace xpu_timer::flamegraph
