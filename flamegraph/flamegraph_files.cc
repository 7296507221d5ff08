#include "flamegraph/flamegraph_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/rank_set.h"
#include "flamegraph/folded_writer.h"
#include "flamegraph/svg_renderer.h"

namespace xpu_timer::flamegraph {
namespace {

bool write_file(const std::string& path, const std::string& text, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = "cannot write " + path + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

const char* view_title(View view) {
  switch (view) {
    case View::kCpp:
      return "Native stacks of all ranks";
    case View::kPy:
      return "Python stacks of all ranks";
    case View::kMixed:
      return "Mixed native + Python stacks of all ranks";
  }
  return "";
}

std::string subtitle(const MergeResult& merged, const MergedView& view) {
  const std::vector<int> missing = merged.ranks_with_file.complement(merged.world_size);
  std::string s = "world size " + std::to_string(merged.world_size) + ", files of " +
                  std::to_string(merged.ranks_with_file.count()) + " ranks";
  if (!missing.empty()) s += " (no file: " + fold_ranks(missing) + ")";
  s += "; " + std::to_string(view.nodes[kRootNode].total) + " thread stacks";
  return s;
}

}  // namespace

bool write_flamegraphs(const MergeResult& merged, const std::string& out_dir,
                       std::vector<std::string>* written, std::string* error,
                       const std::optional<HangVerdict>& verdict) {
  const std::string dir = out_dir.empty() || out_dir.back() == '/' ? out_dir : out_dir + "/";
  for (const MergedView& view : merged.views) {
    const std::string base = dir + view_name(view.view) + "_stack";
    if (!write_file(base, folded_stacks(view), error)) return false;
    written->push_back(base);
    SvgOptions options;
    options.title = view_title(view.view);
    options.subtitle = subtitle(merged, view);
    options.world_size = merged.world_size;
    options.verdict = verdict;
    options.no_file = merged.ranks_with_file.complement(merged.world_size);
    if (!write_file(base + ".svg", render_svg(view, merged.labels, options), error)) return false;
    written->push_back(base + ".svg");
  }
  return true;
}

}  // namespace xpu_timer::flamegraph
