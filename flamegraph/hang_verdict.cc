#include "flamegraph/hang_verdict.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>

#include "common/file_reader.h"
#include "common/hang_document.h"

namespace xpu_timer::flamegraph {
namespace {

std::string_view last_component(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string parent_of(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + "/..";
}

// The odd ranks of the document's collective mismatches. Their shape is the
// supervisor's (collective_check.h, "odd_ranks"); the document keeps them
// opaque, so anything else than an array of integers is skipped here.
std::vector<int> mismatched_ranks(const nlohmann::json& mismatches) {
  std::vector<int> out;
  if (!mismatches.is_array()) return out;
  for (const nlohmann::json& m : mismatches) {
    if (!m.is_object()) continue;
    const auto odd = m.find("odd_ranks");
    if (odd == m.end() || !odd->is_array()) continue;
    for (const nlohmann::json& r : *odd) {
      if (r.is_number_integer() && r.get<int64_t>() >= 0 && r.get<int64_t>() <= INT32_MAX) {
        out.push_back(static_cast<int>(r.get<int64_t>()));
      }
    }
  }
  return out;
}

void sort_unique(std::vector<int>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

// The verdict of a document read; nullopt when it describes no hang.
std::optional<HangVerdict> verdict_of(const hang_document::Document& doc) {
  HangVerdict v;
  v.summary = doc.summary;
  v.stalled = doc.stalled;
  // The stuck ranks outside a strictly largest group wait in an operation
  // the others never reached: they are culprits, the others their victims.
  // With two groups of one size, who went astray cannot be told.
  std::set<int> elsewhere;
  size_t largest = 0;
  bool tie = false;
  for (size_t g = 1; g < doc.groups.size(); ++g) {
    const size_t n = doc.groups[g].ranks.size(), best = doc.groups[largest].ranks.size();
    if (n > best) largest = g;
    tie = n == best ? true : (n > best ? false : tie);
  }
  for (size_t g = 0; g < doc.groups.size() && !tie && doc.roots.empty(); ++g) {
    if (g != largest) elsewhere.insert(doc.groups[g].ranks.begin(), doc.groups[g].ranks.end());
  }
  // A document that names the roots of the waits says it exactly: the ranks
  // of a deadlock by order are culprits, every other stuck rank waits on a
  // root (the largest group is no guide: a waiter two communicators away
  // may be alone in its group).
  for (const hang_document::Root& root : doc.roots) {
    if (root.kind == "cycle") elsewhere.insert(root.ranks.begin(), root.ranks.end());
  }
  for (const hang_document::Rank& r : doc.ranks) {
    if (r.state == "stuck") {
      (elsewhere.count(r.rank) != 0 ? v.stuck_elsewhere : v.stuck).push_back(r.rank);
    }
    if (r.state == "missing") v.missing.push_back(r.rank);
    if (r.state == "unresponsive") v.unresponsive.push_back(r.rank);
    if (r.state == "exited") v.exited.push_back(r.rank);
  }
  // A rank the verdict already names keeps that role.
  std::set<int> named(v.missing.begin(), v.missing.end());
  for (const std::vector<int>* list : {&v.stuck, &v.stuck_elsewhere, &v.unresponsive, &v.exited}) {
    named.insert(list->begin(), list->end());
  }
  for (int r : mismatched_ranks(doc.mismatches)) {
    if (named.count(r) == 0) v.mismatched.push_back(r);
  }
  for (std::vector<int>* list :
       {&v.stuck, &v.missing, &v.stuck_elsewhere, &v.unresponsive, &v.exited, &v.mismatched}) {
    sort_unique(list);
  }
  if (v.stuck.empty() && v.stuck_elsewhere.empty() && !v.stalled && v.mismatched.empty()) {
    return std::nullopt;  // no hang: nothing to name
  }
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
    const ReadFileStatus status = read_regular_file(path, hang_document::kMaxBytes, &text, &error);
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
      std::string name(last_component(dir));
      if (char* real = ::realpath(dir.empty() ? "." : dir.c_str(), nullptr)) {
        name = std::string(last_component(real));
        std::free(real);
      }
      // The dump folder's hang.json describes the latest hang: use it only
      // when its stacks are these.
      const std::string stacks = doc.stacks_dir();
      if (stacks.empty() || last_component(stacks) != name) {
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
