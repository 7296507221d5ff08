// Reads every stack file of a dump folder and merges them: the library entry
// point used by the viewer CLI (and meant for the supervisor after a hang).
// Problems with single files are collected as lines for the user; only a
// folder that cannot be read or that holds no valid file is a failure.
#pragma once

#include <string>
#include <vector>

#include "flamegraph/merged_stacks.h"

namespace xpu_timer::flamegraph {

struct MergeOptions {
  unsigned threads = 2;   // decoding workers
  bool progress = false;  // progress bar on stderr
};

struct DumpMerge {
  MergeResult merged;
  size_t files_found = 0;
  size_t files_merged = 0;
  // One line per skipped file or collector complaint, each naming the file.
  std::vector<std::string> warnings;
};

// False with *error set (e.g. "no .stacktrace file in /x") when nothing could be merged.
bool merge_dump(const std::string& dir, const MergeOptions& options, DumpMerge* out,
                std::string* error);

}  // namespace xpu_timer::flamegraph
