#include "flamegraph/dump_merger.h"

#include <unordered_map>

#include "flamegraph/progress_bar.h"
#include "flamegraph/stack_file_loader.h"

namespace xpu_timer::flamegraph {

bool merge_dump(const std::string& dir, const MergeOptions& options, DumpMerge* out,
                std::string* error) {
  std::vector<std::string> paths;
  if (!stack::list_stack_files(dir, &paths, error)) return false;
  out->files_found = paths.size();
  if (paths.empty()) {
    *error = "no .stacktrace file in " + dir;
    return false;
  }

  StackMerger merger;
  std::unordered_map<int, std::string> path_of_rank;
  ProgressBar bar(options.progress, "stack files");
  LoadOptions load;
  load.threads = options.threads;
  load.on_progress = [&](size_t done, size_t total) { bar.update(done, total); };
  LoadSummary summary =
      load_stack_files(paths, load, [&](const std::string& path, const stack::ProcessStack& file) {
        // The reader checked 0 <= rank < world_size: add() refuses only a second file of a rank.
        if (!merger.add(file)) {
          out->warnings.push_back(path + ": rank " + std::to_string(file.rank) +
                                  " was already read from " + path_of_rank[file.rank] +
                                  "; file skipped");
          return;
        }
        path_of_rank.emplace(file.rank, path);
        ++out->files_merged;
        if (!file.errors.empty()) {
          out->warnings.push_back(path + ": the collector reported " +
                                  std::to_string(file.errors.size()) +
                                  " problem(s), stacks may be partial; first: " + file.errors[0]);
        }
      });
  for (const LoadProblem& p : summary.problems)
    out->warnings.push_back(p.message + "; file skipped");
  out->merged = merger.finish();
  if (out->files_merged == 0) {
    *error = "none of the " + std::to_string(paths.size()) + " .stacktrace file(s) in " + dir +
             " could be read";
    return false;
  }
  return true;
}

}  // namespace xpu_timer::flamegraph
