#include "flamegraph/hang_verdict.h"

#include <algorithm>
#include <cstdlib>

#include "common/file_reader.h"
#include "common/hang_document.h"

namespace xpu_timer::flamegraph {
namespace {

std::string_view basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string parent_of(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + "/..";
}

// The verdict of a document read; nullopt when it describes no hang.
std::optional<HangVerdict> verdict_of(const hang_document::Document& doc) {
  HangVerdict v;
  v.summary = doc.summary;
  for (const hang_document::Rank& r : doc.ranks) {
    if (r.state == "stuck") v.stuck.push_back(r.rank);
    if (r.state == "missing") v.missing.push_back(r.rank);
  }
  if (v.stuck.empty()) return std::nullopt;  // no hang: nothing to name
  std::sort(v.stuck.begin(), v.stuck.end());
  std::sort(v.missing.begin(), v.missing.end());
  return v;
}

}  // namespace

std::optional<HangVerdict> parse_hang_verdict(std::string_view text, std::string* error) {
  hang_document::Document doc;
  std::vector<std::string> ignored;  // a key dropped costs the graphs nothing
  if (!hang_document::parse(text, &doc, error, &ignored)) return std::nullopt;
  return verdict_of(doc);
}

std::optional<HangVerdict> find_hang_verdict(const std::string& dir, std::string* warning) {
  warning->clear();
  const std::string own = (dir.empty() ? std::string(".") : dir) + "/hang.json";
  const std::string parent = parent_of(dir.empty() ? std::string(".") : dir) + "/hang.json";
  for (const std::string& path : {own, parent}) {
    std::string text, error;
    const ReadFileStatus status =
        read_regular_file(path, hang_document::kMaxBytes, &text, &error);
    if (status == ReadFileStatus::kMissing) continue;
    if (status != ReadFileStatus::kOk) {
      *warning = path + ": " + error + "; the graphs name no hang";
      return std::nullopt;
    }
    hang_document::Document doc;
    std::vector<std::string> ignored;
    if (!hang_document::parse(text, &doc, &error, &ignored)) {
      // The parent's may be any hang's: only one in the folder is surely ours.
      if (path == own) *warning = path + ": " + error + "; the graphs name no hang";
      return std::nullopt;
    }
    if (path == parent) {
      // "." or "stacks-x/" name their folder only once resolved.
      std::string name(basename(dir));
      if (char* real = ::realpath(dir.empty() ? "." : dir.c_str(), nullptr)) {
        name = std::string(basename(real));
        std::free(real);
      }
      // The dump folder's hang.json describes the latest hang: use it only
      // when its stacks are these.
      const std::string stacks = doc.stacks_dir();
      if (stacks.empty() || basename(stacks) != name) {
        return std::nullopt;  // another dump's hang, or stacks taken on request
      }
    }
    std::optional<HangVerdict> v = verdict_of(doc);
    if (v) v->source = path;
    return v;
  }
  return std::nullopt;
}

}  // namespace xpu_timer::flamegraph
