#include "flamegraph/culprits.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/rank_set.h"
#include "flamegraph/label_fit.h"

namespace xpu_timer::flamegraph {
namespace {

constexpr const char* kRoleNames[kRoleCount] = {
    "stuck",      "stuck elsewhere", "missing",  "unresponsive", "exited",
    "mismatched", "differs",         "no stack", "other"};

// The order of the panel: the verdict's own culprit first.
constexpr RankRole kPanelOrder[] = {RankRole::kMissing,      RankRole::kStuckElsewhere,
                                    RankRole::kMismatched,   RankRole::kUnresponsive,
                                    RankRole::kExited,       RankRole::kDiffers,
                                    RankRole::kNoStack};

// The label without its trailing ":<line>", so that frames of one function
// on different lines count as one place.
std::string_view without_line(std::string_view label) {
  size_t end = label.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(label[end - 1]))) --end;
  if (end == label.size() || end == 0 || label[end - 1] != ':') return label;
  return label.substr(0, end - 1);
}

// A key per node naming its path: the node itself (exact), or its path with
// line numbers dropped (coarse). Parents precede children in the view.
std::vector<uint32_t> coarse_keys(const MergedView& view, const StringInterner& labels) {
  std::vector<uint32_t> key(view.nodes.size(), 0);
  std::unordered_map<uint32_t, uint32_t> label_ids;  // label id -> id of it without line
  std::unordered_map<std::string_view, uint32_t> stripped_ids;
  std::unordered_map<uint64_t, uint32_t> path_ids;  // (parent key, stripped id) -> key
  for (size_t i = 1; i < view.nodes.size(); ++i) {
    const MergedNode& n = view.nodes[i];
    auto [it, fresh] = label_ids.emplace(n.label, 0);
    if (fresh) {
      it->second = stripped_ids
                       .emplace(without_line(labels.text(n.label)),
                                static_cast<uint32_t>(stripped_ids.size()))
                       .first->second;
    }
    const uint64_t k = (uint64_t{key[n.parent]} << 32) | it->second;
    key[i] = path_ids.emplace(k, static_cast<uint32_t>(path_ids.size() + 1)).first->second;
  }
  return key;
}

std::vector<uint32_t> exact_keys(const MergedView& view) {
  std::vector<uint32_t> key(view.nodes.size());
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint32_t>(i);
  return key;
}

// How many ranks of the population pass through each key. Each rank walks
// up from its leaves and stops at a key it already counted: the keys of the
// ancestors follow from the key, so they were counted with it.
std::vector<uint32_t> ranks_per_key(const MergedView& view, const std::vector<uint32_t>& key,
                                    const std::vector<bool>& population) {
  uint32_t keys = 0;
  for (uint32_t k : key) keys = std::max(keys, k + 1);
  std::vector<uint32_t> count(keys, 0);
  std::vector<int64_t> stamp(keys, -1);
  for (size_t r = 0; r < view.rank_leaves.size(); ++r) {
    if (r >= population.size() || !population[r]) continue;
    for (uint32_t leaf : view.rank_leaves[r]) {
      for (uint32_t n = leaf; n != kRootNode; n = view.nodes[n].parent) {
        if (stamp[key[n]] == static_cast<int64_t>(r)) break;
        stamp[key[n]] = static_cast<int64_t>(r);
        ++count[key[n]];
      }
    }
  }
  return count;
}

// Which paths are rare: held by at most an eighth of the population (and by
// at least `min_rare` ranks, when the population is told apart by itself).
struct Rarity {
  const std::vector<uint32_t>* key;
  std::vector<uint32_t> count;
  uint32_t limit = 0;
  bool rare(uint32_t node) const { return count[(*key)[node]] <= limit; }
};

Rarity rarity(const MergedView& view, const std::vector<uint32_t>& key,
              const std::vector<bool>& population, uint32_t population_size, uint32_t min_limit) {
  Rarity r{&key, ranks_per_key(view, key, population), 0};
  r.limit = std::max(min_limit, population_size / 8);
  return r;
}

// The thread stacks of `rank` that are rare, each with its outermost rare frame.
std::vector<CulpritThread> rare_threads(const MergedView& view, int rank, const Rarity& rarity) {
  std::vector<CulpritThread> out;
  for (uint32_t leaf : view.rank_leaves[rank]) {
    if (!rarity.rare(leaf)) continue;
    uint32_t diverges = leaf;
    // Counts shrink from root to leaf, so the rare frames are one run at the top.
    while (view.nodes[diverges].parent != kRootNode && rarity.rare(view.nodes[diverges].parent)) {
      diverges = view.nodes[diverges].parent;
    }
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const CulpritThread& t) { return t.leaf == leaf; });
    if (!seen) out.push_back({leaf, diverges});
  }
  return out;
}

// The outermost frame of the thread: its state frame (the whole stack differs).
uint32_t outermost(const MergedView& view, uint32_t leaf) {
  uint32_t n = leaf;
  while (view.nodes[n].parent != kRootNode) n = view.nodes[n].parent;
  return n;
}

uint32_t where_of(const MergedView& view, const StringInterner& labels, const CulpritThread& t) {
  uint32_t with_line = kRootNode;
  for (uint32_t n = t.leaf;; n = view.nodes[n].parent) {
    if (view.nodes[n].kind == FrameKind::kPython) return n;
    if (with_line == kRootNode && has_line_number(labels.text(view.nodes[n].label))) with_line = n;
    if (n == t.diverges || view.nodes[n].parent == kRootNode) break;
  }
  return with_line != kRootNode ? with_line : t.leaf;
}

// Groups the culprit ranks by (role, what is shown of them).
class Grouper {
 public:
  void add(RankRole role, int rank, std::vector<CulpritThread> threads, bool like_others) {
    std::vector<std::pair<uint32_t, uint32_t>> shape;
    for (const CulpritThread& t : threads) shape.emplace_back(t.leaf, t.diverges);
    auto [it, fresh] = index_.emplace(std::make_tuple(role, like_others, std::move(shape)),
                                      groups_.size());
    if (fresh) {
      CulpritGroup g;
      g.role = role;
      g.threads = std::move(threads);
      g.like_others = like_others;
      groups_.push_back(std::move(g));
    }
    groups_[it->second].ranks.push_back(rank);  // ranks come in ascending order
  }
  std::vector<CulpritGroup> take() {
    std::stable_sort(groups_.begin(), groups_.end(), [](const auto& a, const auto& b) {
      const auto pa = std::find(std::begin(kPanelOrder), std::end(kPanelOrder), a.role);
      const auto pb = std::find(std::begin(kPanelOrder), std::end(kPanelOrder), b.role);
      return std::make_pair(pa, a.ranks.front()) < std::make_pair(pb, b.ranks.front());
    });
    return std::move(groups_);
  }

 private:
  std::map<std::tuple<RankRole, bool, std::vector<std::pair<uint32_t, uint32_t>>>, size_t> index_;
  std::vector<CulpritGroup> groups_;
};

void set_roles(std::vector<RankRole>* roles, const std::vector<int>& ranks, RankRole role) {
  for (int r : ranks) {
    if (r >= 0 && static_cast<size_t>(r) < roles->size()) (*roles)[r] = role;
  }
}

}  // namespace

const char* role_name(RankRole role) { return kRoleNames[static_cast<int>(role)]; }

RankRole Culprits::role(int rank) const {
  return rank >= 0 && static_cast<size_t>(rank) < roles.size() ? roles[rank] : RankRole::kOther;
}

bool Culprits::is_culprit(int rank) const {
  const RankRole r = role(rank);
  return r != RankRole::kOther && r != RankRole::kStuck;
}

std::string Culprits::describe(const std::vector<int>& ranks) const {
  std::vector<int> by[kRoleCount];
  for (int r : ranks) by[static_cast<int>(role(r))].push_back(r);
  std::string s;
  for (int role = 0; role < kRoleCount; ++role) {
    if (by[role].empty()) continue;
    if (!s.empty()) s += ", ";
    s += std::string(kRoleNames[role]) + " " + fold_ranks(by[role]);
  }
  return s.empty() ? "none" : s;
}

std::string ranks_phrase(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + fold_ranks(ranks);
}

Culprits find_culprits(const MergedView& view, const StringInterner& labels, uint32_t world_size,
                       const std::vector<int>& no_file, const HangVerdict* verdict) {
  Culprits out;
  const std::vector<int> in_view = view.nodes[kRootNode].ranks.to_vector();
  uint32_t world = world_size;
  if (!in_view.empty()) world = std::max(world, static_cast<uint32_t>(in_view.back()) + 1);
  out.roles.assign(world, RankRole::kOther);
  out.view_ranks = static_cast<uint32_t>(in_view.size());
  auto has_stack = [&](int r) {
    return static_cast<size_t>(r) < view.rank_leaves.size() && !view.rank_leaves[r].empty();
  };
  if (verdict != nullptr) {
    set_roles(&out.roles, verdict->stuck, RankRole::kStuck);
    set_roles(&out.roles, verdict->stuck_elsewhere, RankRole::kStuckElsewhere);
    set_roles(&out.roles, verdict->missing, RankRole::kMissing);
    set_roles(&out.roles, verdict->unresponsive, RankRole::kUnresponsive);
    set_roles(&out.roles, verdict->exited, RankRole::kExited);
    set_roles(&out.roles, verdict->mismatched, RankRole::kMismatched);
  }
  std::vector<int> named;
  for (uint32_t r = 0; r < world; ++r) {
    if (out.is_culprit(static_cast<int>(r))) named.push_back(static_cast<int>(r));
  }
  const std::vector<uint32_t> coarse = coarse_keys(view, labels);
  Grouper groups;
  if (!named.empty()) {
    // The verdict's culprits, told apart from everyone else in the view.
    out.from_verdict = true;
    std::vector<bool> others(world, false);
    uint32_t n_others = 0;
    for (int r : in_view) {
      if (!out.is_culprit(r)) {
        others[r] = true;
        ++n_others;
      }
    }
    const Rarity by_place = rarity(view, coarse, others, n_others, 0);
    const std::vector<uint32_t> exact = exact_keys(view);
    std::optional<Rarity> by_line;  // computed only if a culprit needs it
    for (int r : named) {
      if (!has_stack(r)) {
        groups.add(out.role(r), r, {}, false);
        continue;
      }
      std::vector<CulpritThread> threads = rare_threads(view, r, by_place);
      if (threads.empty()) {
        if (!by_line) by_line = rarity(view, exact, others, n_others, 0);
        threads = rare_threads(view, r, *by_line);
      }
      const bool like_others = threads.empty();
      if (like_others) {
        const uint32_t leaf = view.rank_leaves[r].front();
        threads.push_back({leaf, outermost(view, leaf)});
      }
      groups.add(out.role(r), r, std::move(threads), like_others);
    }
  } else {
    // No culprit named: the ranks whose stacks few others share.
    std::vector<bool> all(world, false);
    for (int r : in_view) all[r] = true;
    if (in_view.size() >= 3) {
      const Rarity by_place =
          rarity(view, coarse, all, static_cast<uint32_t>(in_view.size()), 1);
      for (int r : in_view) {
        std::vector<CulpritThread> threads = rare_threads(view, r, by_place);
        if (threads.empty()) continue;
        out.roles[r] = RankRole::kDiffers;
        groups.add(RankRole::kDiffers, r, std::move(threads), false);
      }
    }
    for (int r : no_file) {
      if (r < 0 || static_cast<uint32_t>(r) >= world || out.role(r) != RankRole::kOther) continue;
      out.roles[r] = RankRole::kNoStack;
      groups.add(RankRole::kNoStack, r, {}, false);
    }
  }
  out.groups = groups.take();
  for (CulpritGroup& g : out.groups) {
    if (!g.threads.empty()) g.where = where_of(view, labels, g.threads.front());
  }
  return out;
}

std::string culprit_headline(const Culprits& culprits, const MergedView& view,
                             const StringInterner& labels, long max_chars) {
  if (culprits.empty()) return "";
  const CulpritGroup& g = culprits.groups.front();
  std::string who = ranks_phrase(g.ranks) + " ";
  const bool one = g.ranks.size() == 1;
  switch (g.role) {
    case RankRole::kStuckElsewhere:
      who += "stuck in another operation";
      break;
    case RankRole::kMismatched:
      who += "issued a mismatched collective";
      break;
    case RankRole::kDiffers: {
      const uint32_t others = culprits.view_ranks - static_cast<uint32_t>(g.ranks.size());
      who += std::string(one ? "differs" : "differ") + " from the other " +
             std::to_string(others) + (others == 1 ? " rank" : " ranks");
      break;
    }
    case RankRole::kNoStack:
      who += one ? "left no stack file" : "left no stack files";
      break;
    default:
      who += role_name(g.role);
  }
  std::string more;
  if (culprits.groups.size() > 1) {
    const size_t n = culprits.groups.size() - 1;
    more = "; " + std::to_string(n) + (n == 1 ? " more group" : " more groups") + " below";
  }
  if (g.threads.empty()) {
    if (g.role != RankRole::kNoStack) who += " (no stack in this view)";
    return who + more;
  }
  const LabelParts where = split_label(labels.text(view.nodes[g.where].label));
  const std::string in = ", in ";
  const long fixed = char_count(who) + char_count(in) + char_count(more);
  const FittedLabel fitted = fit_label(where.func, where.source, max_chars - fixed, 3);
  if (fitted.source.empty()) return who + more;
  const std::string place =
      fitted.func.empty() ? fitted.source : fitted.func + " (" + fitted.source + ")";
  return who + in + place + more;
}

}  // namespace xpu_timer::flamegraph
