#include "supervisor/analysis/overview_json.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/rank_set.h"

namespace xpu_timer::supervisor {
namespace {

using nlohmann::json;

// Readers that take a key of another type, or a document that is no object,
// as absent (see the header).
const json& at_key(const json& j, const char* name) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(name);
  return it == j.end() ? kNull : *it;
}
const json& array_at(const json& j, const char* name) {
  static const json kEmpty = json::array();
  const json& v = name != nullptr ? at_key(j, name) : j;
  return v.is_array() ? v : kEmpty;
}
std::string string_at(const json& j, const char* name) {
  const json& v = at_key(j, name);
  return v.is_string() ? v.get<std::string>() : std::string();
}
std::optional<double> number_at(const json& j, const char* name) {
  const json& v = at_key(j, name);
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}
std::optional<int64_t> integer_at(const json& j, const char* name) {
  const json& v = at_key(j, name);
  if (!v.is_number_integer()) return std::nullopt;
  return v.get<int64_t>();
}
bool bool_at(const json& j, const char* name) {
  const json& v = at_key(j, name);
  return v.is_boolean() && v.get<bool>();
}
// The value of `name` if it is of a JSON type `keep` accepts, else null.
json typed_at(const json& j, const char* name, bool (json::*keep)() const noexcept) {
  const json& v = at_key(j, name);
  return (v.*keep)() ? v : json(nullptr);
}
std::vector<int> rank_list(const json& array) {
  std::vector<int> out;
  for (const json& r : array_at(array, nullptr)) {
    if (r.is_number_integer()) out.push_back(r.get<int>());
  }
  return out;
}

// What is known of one rank, from the three documents.
struct RankInfo {
  std::string state;
  std::optional<int64_t> node;
  std::string reason;
  std::string op_name, op_comm;  // the operation in flight, or else the last completed
  std::optional<uint64_t> op_seq;
  bool op_known = false, in_flight = false;
  std::optional<double> pending_s, late_s;
  std::optional<uint64_t> steps;
};

void take_operation(const json& op, bool in_flight, RankInfo* info) {
  if (!op.is_object()) return;
  info->op_known = true;
  info->in_flight = in_flight;
  info->op_name = string_at(op, "name");
  info->op_comm = string_at(op, "comm");
  if (const auto seq = integer_at(op, "seq"); seq && *seq >= 0) info->op_seq = *seq;
}

// The ranks' states in the order their groups are listed: what the others
// wait on first, healthy ranks last.
int state_order(const std::string& state) {
  static const char* const kOrder[] = {"missing",      "exited", "crashed", "terminated",
                                       "unresponsive", "stuck",  "stalled", "ok"};
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    if (state == kOrder[i]) return static_cast<int>(i);
  }
  return static_cast<int>(std::size(kOrder));
}

struct Group {
  std::string state, reason;
  std::vector<int> ranks;
  std::set<int64_t> nodes;
  // (name, comm) -> {ranks, lowest seq, highest seq, ranks with it in flight}
  std::map<std::pair<std::string, std::string>, std::tuple<size_t, uint64_t, uint64_t, size_t>> ops;
  std::optional<uint64_t> steps_min, steps_max;
  std::optional<double> pending_max, late_max;
};

void add_to(Group* g, int rank, const RankInfo& info) {
  g->ranks.push_back(rank);
  if (info.node) g->nodes.insert(*info.node);
  if (info.op_known && !info.op_name.empty()) {
    auto [it, fresh] = g->ops.try_emplace({info.op_name, info.op_comm}, 0, UINT64_MAX, 0, 0);
    auto& [count, lo, hi, flying] = it->second;
    ++count;
    if (info.op_seq) {
      lo = std::min(lo, *info.op_seq);
      hi = std::max(hi, *info.op_seq);
    }
    if (info.in_flight) ++flying;
  }
  auto widen = [](auto* lo, auto* hi, auto v) {
    if (!*lo || v < **lo) *lo = v;
    if (hi != nullptr && (!*hi || v > **hi)) *hi = v;
  };
  if (info.steps) widen(&g->steps_min, &g->steps_max, *info.steps);
  if (info.pending_s && info.in_flight) {
    g->pending_max = std::max(g->pending_max.value_or(0.0), *info.pending_s);
  }
  if (info.late_s) g->late_max = std::max(g->late_max.value_or(0.0), *info.late_s);
}

json group_json(const Group& g, const std::map<std::string, std::string>& comm_names) {
  json operation = nullptr;
  const auto most = std::max_element(g.ops.begin(), g.ops.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a.second) < std::get<0>(b.second);
  });
  if (most != g.ops.end()) {
    const auto& [name, comm] = most->first;
    const auto& [count, lo, hi, flying] = most->second;
    const auto named = comm_names.find(comm);
    operation = {{"name", name},
                 {"comm", comm.empty() ? json(nullptr) : json(comm)},
                 {"comm_name", named != comm_names.end() ? json(named->second) : json(nullptr)},
                 {"seq_min", lo != UINT64_MAX ? json(lo) : json(nullptr)},
                 {"seq_max", lo != UINT64_MAX ? json(hi) : json(nullptr)},
                 {"in_flight", flying * 2 > count}};
  }
  std::vector<int> nodes;
  for (int64_t n : g.nodes) nodes.push_back(static_cast<int>(n));
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  return {{"state", g.state},
          {"count", g.ranks.size()},
          {"ranks", fold_ranks(g.ranks)},
          {"nodes", nodes.empty() ? json(nullptr) : json(fold_ranks(nodes))},
          {"reason", g.reason.empty() ? json(nullptr) : json(g.reason)},
          {"operation", std::move(operation)},
          {"steps_min", opt(g.steps_min)},
          {"steps_max", opt(g.steps_max)},
          {"pending_s_max", opt(g.pending_max)},
          {"late_s_max", opt(g.late_max)}};
}

// Every rank the documents name, keyed by rank.
std::map<int, RankInfo> rank_infos(const json& hang, const json& ranks, const json& slow,
                                   std::map<std::string, std::string>* comm_names) {
  std::map<int, RankInfo> infos;
  for (const json& r : array_at(hang, "ranks")) {
    const auto rank = integer_at(r, "rank");
    if (!rank) continue;
    RankInfo& info = infos[static_cast<int>(*rank)];
    info.state = string_at(r, "state");
    info.node = integer_at(r, "node");
    info.reason = string_at(r, "reason");
    take_operation(at_key(r, "operation"), true, &info);
    info.pending_s = number_at(r, "pending_s");
    if (!string_at(r, "comm").empty() && !string_at(r, "comm_name").empty()) {
      (*comm_names)[string_at(r, "comm")] = string_at(r, "comm_name");
    }
  }
  for (const json& g : array_at(hang, "groups")) {
    if (!string_at(g, "comm").empty() && !string_at(g, "comm_name").empty()) {
      (*comm_names)[string_at(g, "comm")] = string_at(g, "comm_name");
    }
  }
  for (const json& r : array_at(ranks, nullptr)) {
    const auto rank = integer_at(r, "rank");
    if (!rank) continue;
    RankInfo& info = infos[static_cast<int>(*rank)];
    // How a rank ended is fresher than the last verdict.
    const std::string state = string_at(r, "state");
    if (info.state.empty() || state == "exited" || state == "crashed" || state == "terminated") {
      info.state = state;
    }
    if (const auto steps = integer_at(r, "steps"); steps && *steps >= 0) info.steps = *steps;
    if (!info.op_known) {
      const json& oldest = at_key(r, "oldest_inflight");
      take_operation(oldest.is_object() ? oldest : at_key(r, "last_completed"), oldest.is_object(),
                     &info);
      if (oldest.is_object()) info.pending_s = number_at(oldest, "pending_s");
    }
    for (const json& c : array_at(r, "comms")) {
      if (!string_at(c, "comm").empty() && !string_at(c, "name").empty()) {
        (*comm_names)[string_at(c, "comm")] = string_at(c, "name");
      }
    }
  }
  for (const json& r : array_at(slow, "ranks")) {
    const auto rank = integer_at(r, "rank");
    if (rank && infos.count(static_cast<int>(*rank)) != 0 &&
        integer_at(r, "collectives").value_or(0) > 0) {
      infos[static_cast<int>(*rank)].late_s = number_at(r, "median_late_s");
    }
  }
  return infos;
}

json rank_groups(const std::map<int, RankInfo>& infos,
                 const std::map<std::string, std::string>& comm_names, size_t registered) {
  std::map<std::string, Group> groups;
  for (const auto& [rank, info] : infos) {
    const std::string state = info.state.empty() ? "unknown" : info.state;
    std::string detail;
    if (state == "stuck" && info.in_flight) {
      detail = info.op_name + " " + info.op_comm + " " +
               (info.op_seq ? std::to_string(*info.op_seq) : std::string());
    } else if (state == "missing") {
      detail = info.reason;
    }
    Group& g = groups[state + '\x1f' + detail];
    g.state = state;
    if (state == "missing") g.reason = info.reason;
    add_to(&g, rank, info);
  }
  std::vector<const Group*> order;
  for (const auto& [k, g] : groups) order.push_back(&g);
  const auto listed_before = [](const Group* g) {
    return std::make_tuple(state_order(g->state), -static_cast<int64_t>(g->ranks.size()),
                           g->ranks.front());
  };
  std::sort(order.begin(), order.end(),
            [&](const Group* a, const Group* b) { return listed_before(a) < listed_before(b); });
  json out = json::array();
  for (size_t i = 0; i < order.size() && i < kMaxGroups; ++i) {
    out.push_back(group_json(*order[i], comm_names));
  }
  return {{"expected", infos.size()},
          {"registered", registered},
          {"groups", std::move(out)},
          {"groups_omitted", order.size() > kMaxGroups ? order.size() - kMaxGroups : 0}};
}

json roots_json(const json& hang) {
  std::map<int, const json*> by_rank;
  for (const json& r : array_at(hang, "ranks")) {
    if (const auto rank = integer_at(r, "rank")) by_rank[static_cast<int>(*rank)] = &r;
  }
  json out = json::array();
  for (const json& root : array_at(hang, "roots")) {
    if (out.size() == kMaxListed) break;
    const std::vector<int> ranks = rank_list(at_key(root, "ranks"));
    size_t waiters = 0;
    for (const json& level : array_at(root, "waiters")) waiters += rank_list(level).size();
    json culprits = json::array();
    for (int rank : ranks) {
      if (culprits.size() == kMaxListed) break;
      const auto it = by_rank.find(rank);
      const json none = json::object();
      const json& r = it != by_rank.end() ? *it->second : none;
      culprits.push_back({{"rank", rank},
                          {"node", typed_at(r, "node", &json::is_number_integer)},
                          {"host", typed_at(r, "host", &json::is_string)},
                          {"state", typed_at(r, "state", &json::is_string)},
                          {"reason", typed_at(r, "reason", &json::is_string)},
                          {"where", array_at(r, "where")}});
    }
    out.push_back({{"kind", typed_at(root, "kind", &json::is_string)},
                   {"ranks", fold_ranks(ranks)},
                   {"count", ranks.size()},
                   {"waiters", waiters},
                   {"culprits", std::move(culprits)}});
  }
  return out;
}

json crashes_json(const json& ranks) {
  std::vector<const json*> crashed;
  for (const json& r : array_at(ranks, nullptr)) {
    const json& c = at_key(r, "crash");
    if (c.is_object() && string_at(c, "outcome") != "terminated") crashed.push_back(&c);
  }
  std::stable_sort(crashed.begin(), crashed.end(), [](const json* a, const json* b) {
    return number_at(*a, "time").value_or(0) > number_at(*b, "time").value_or(0);
  });
  json latest = json::array();
  for (size_t i = 0; i < crashed.size() && i < kMaxListed; ++i) {
    const json& c = *crashed[i];
    latest.push_back({{"rank", typed_at(c, "rank", &json::is_number_integer)},
                      {"pid", typed_at(c, "pid", &json::is_number_integer)},
                      {"host", typed_at(c, "host", &json::is_string)},
                      {"outcome", typed_at(c, "outcome", &json::is_string)},
                      {"kind", typed_at(c, "kind", &json::is_string)},
                      {"time", typed_at(c, "time", &json::is_number)},
                      {"summary", typed_at(c, "summary", &json::is_string)}});
  }
  return {{"count", crashed.size()}, {"latest", std::move(latest)}};
}

json mismatches_json(const json& hang) {
  const json& all = array_at(hang, "mismatches");
  json latest = json::array();
  for (auto it = all.rbegin(); it != all.rend() && latest.size() < kMaxListed; ++it) {
    latest.push_back({{"summary", typed_at(*it, "summary", &json::is_string)},
                      {"odd_ranks", fold_ranks(rank_list(at_key(*it, "odd_ranks")))},
                      {"comm", typed_at(*it, "comm", &json::is_string)},
                      {"comm_name", typed_at(*it, "comm_name", &json::is_string)},
                      {"seq", typed_at(*it, "seq", &json::is_number_integer)}});
  }
  const auto total = integer_at(hang, "mismatch_total");
  return {{"total", total ? *total : static_cast<int64_t>(all.size())},
          {"checked", integer_at(hang, "collectives_checked").value_or(0)},
          {"latest", std::move(latest)}};
}

json stragglers_json(const json& slow) {
  json out = json::array();
  for (const json& s : array_at(slow, "stragglers")) {
    if (out.size() == kMaxListed) break;
    out.push_back({{"rank", typed_at(s, "rank", &json::is_number_integer)},
                   {"node", typed_at(s, "node", &json::is_number_integer)},
                   {"cause", typed_at(s, "cause", &json::is_string)},
                   {"summary", typed_at(s, "summary", &json::is_string)},
                   {"median_late_s", typed_at(s, "median_late_s", &json::is_number)},
                   {"late_share", typed_at(s, "late_share", &json::is_number)}});
  }
  return {{"summary", typed_at(slow, "summary", &json::is_string)},
          {"window_s", typed_at(slow, "window_s", &json::is_number)},
          {"list", std::move(out)}};
}

}  // namespace

json overview_json(const json& hang, const json& ranks, const json& slow) {
  std::map<std::string, std::string> comm_names;
  const std::map<int, RankInfo> infos = rank_infos(hang, ranks, slow, &comm_names);
  json out;
  out["version"] = kOverviewVersion;
  out["hang"] = {{"hung", bool_at(hang, "hung")},
                 {"stalled", bool_at(hang, "stalled")},
                 {"detected_at", typed_at(hang, "detected_at", &json::is_number)},
                 {"frozen_since", typed_at(hang, "frozen_since", &json::is_number)},
                 {"stalled_since", typed_at(hang, "stalled_since", &json::is_number)},
                 {"timeout_s", typed_at(hang, "timeout_s", &json::is_number)},
                 {"summary", typed_at(hang, "summary", &json::is_string)}};
  out["roots"] = roots_json(hang);
  out["crashes"] = crashes_json(ranks);
  out["mismatches"] = mismatches_json(hang);
  out["stragglers"] = stragglers_json(slow);
  out["ranks"] = rank_groups(infos, comm_names, array_at(ranks, nullptr).size());
  const json& stacks = at_key(hang, "stacks");
  out["stacks"] = stacks.is_object() ? json{{"dir", typed_at(stacks, "dir", &json::is_string)},
                                            {"in_progress", bool_at(stacks, "in_progress")}}
                                     : json(nullptr);
  const json& timeline = at_key(hang, "timeline");
  out["timeline"] = timeline.is_object()
                        ? json{{"dir", typed_at(timeline, "dir", &json::is_string)}}
                        : json(nullptr);
  std::string verdict = "waiting";
  if (bool_at(hang, "hung")) {
    verdict = "hang";
  } else if (bool_at(hang, "stalled")) {
    verdict = "stall";
  } else if (out["crashes"]["count"].get<size_t>() > 0) {
    verdict = "crash";
  } else if (out["mismatches"]["total"].get<int64_t>() > 0) {
    verdict = "mismatch";
  } else if (!out["stragglers"]["list"].empty()) {
    verdict = "stragglers";
  } else if (!array_at(ranks, nullptr).empty()) {
    verdict = "healthy";
  }
  out["verdict"] = verdict;
  return out;
}

}  // namespace xpu_timer::supervisor
