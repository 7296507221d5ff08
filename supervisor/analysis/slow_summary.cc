#include "supervisor/analysis/slow_summary.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "common/comm_names.h"
#include "common/op_names.h"
#include "common/parse_number.h"
#include "supervisor/analysis/slow_report_json.h"
#include "supervisor/analysis/store_document.h"

namespace xpu_timer::supervisor {
namespace {

SlowCause cause_of(const std::string& name) {
  if (name == "gpu") return SlowCause::kGpu;
  if (name == "host") return SlowCause::kHost;
  if (name == "link") return SlowCause::kLink;
  return SlowCause::kUnknown;
}

uint64_t comm_of(const std::string& hex) {
  if (hex.empty() || hex.size() > 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw std::out_of_range("comm '" + hex.substr(0, 20) + "' is not 16 hex digits");
  }
  return *parse_uint(hex, 16);
}

double number(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  return v.is_null() ? 0.0 : v.get<double>();
}

uint16_t op_of(const std::string& name) {
  for (uint16_t v = 32; v <= 39; ++v) {
    if (name == op_name_str(static_cast<proto::OpName>(v))) return v;
  }
  return 0;
}

}  // namespace

NodeSlowSummary node_slow_summary(const SlowReport& report, int node, double unix_s) {
  NodeSlowSummary s;
  s.node = node;
  s.unix_s = unix_s;
  s.stragglers = report.stragglers;
  s.time_in_collective = report.time_in_collective;
  return s;
}

std::string slow_summary_text(const NodeSlowSummary& s) {
  nlohmann::json stragglers = nlohmann::json::array();
  for (const Straggler& st : s.stragglers) stragglers.push_back(straggler_json(st));
  nlohmann::json comms = nlohmann::json::object();
  for (const auto& [comm, ranks] : s.time_in_collective) {
    nlohmann::json r = nlohmann::json::object();
    for (const auto& [rank, v] : ranks) r[std::to_string(rank)] = {v.first, v.second};
    comms[comm_hex(comm)] = std::move(r);
  }
  return nlohmann::json{{"format", kSlowSummaryFormat},
                        {"node", s.node},
                        {"unix_s", s.unix_s},
                        {"stragglers", std::move(stragglers)},
                        {"time_in_collective", std::move(comms)}}
      .dump();
}

bool parse_slow_summary(const std::string& text, int world_size, NodeSlowSummary* out,
                        std::string* error) {
  NodeSlowSummary s;
  auto rank_ok = [&](int r) {
    if (r < 0 || r >= world_size) {
      throw std::out_of_range("rank " + std::to_string(r) + " outside the world of " +
                              std::to_string(world_size));
    }
    return r;
  };
  const bool ok = parse_store_document(text, kSlowSummaryFormat, error, [&](const nlohmann::json& j) {
    s.node = static_cast<int>(doc_integer(j.at("node"), "node", 0, INT32_MAX));
    s.unix_s = j.at("unix_s").get<double>();
    const nlohmann::json& st = j.at("stragglers");
    if (!st.is_array() || st.size() > kMaxSlowSummaryEntries) throw std::out_of_range("stragglers");
    for (const nlohmann::json& e : st) {
      Straggler x;
      x.rank = rank_ok(static_cast<int>(doc_integer(e.at("rank"), "rank", INT32_MIN, INT32_MAX)));
      x.node = e.at("node").is_null()
                   ? -1
                   : static_cast<int>(doc_integer(e.at("node"), "node", INT32_MIN, INT32_MAX));
      if (x.node != s.node) throw std::out_of_range("a straggler of another node");
      x.cause = cause_of(e.at("cause").get<std::string>());
      x.late_share = number(e, "late_share");
      x.median_late_s = number(e, "median_late_s");
      x.wait_caused_s = number(e, "wait_caused_s");
      x.impact = number(e, "impact");
      x.comm = comm_of(e.at("comm").get<std::string>());
      if (!e.at("comm_name").is_null()) x.comm_name = e.at("comm_name").get<std::string>();
      x.op = op_of(e.at("operation").get<std::string>());
      x.collectives = static_cast<size_t>(doc_integer(e.at("collectives"), "collectives", 0, INT64_MAX));
      const nlohmann::json& ev = e.at("evidence");
      x.evidence.arrival_late_s = number(ev, "arrival_late_s");
      x.evidence.launch_late_s = number(ev, "launch_late_s");
      x.evidence.queue_excess_s = number(ev, "queue_excess_s");
      x.evidence.transfer_s = number(ev, "transfer_s");
      x.evidence.peer_transfer_s = number(ev, "peer_transfer_s");
      x.evidence.gemm_ratio = number(ev, "gemm_ratio");
      x.evidence.gemm_shapes =
          static_cast<int>(doc_integer(ev.at("gemm_shapes"), "gemm_shapes", 0, INT32_MAX));
      x.evidence.gemm_peer_spread = number(ev, "gemm_peer_spread");
      x.evidence.gc_s = number(ev, "gc_s");
      x.evidence.peer_gc_s = number(ev, "peer_gc_s");
      x.evidence.loader_s = number(ev, "dataloader_s");
      x.evidence.peer_loader_s = number(ev, "peer_dataloader_s");
      x.summary = e.at("summary").get<std::string>();
      s.stragglers.push_back(std::move(x));
    }
    const nlohmann::json& comms = j.at("time_in_collective");
    if (!comms.is_object() || comms.size() > kMaxSlowSummaryEntries) {
      throw std::out_of_range("time_in_collective");
    }
    for (const auto& [hex, ranks] : comms.items()) {
      if (!ranks.is_object() || ranks.size() > kMaxSlowSummaryEntries) {
        throw std::out_of_range("time_in_collective of comm " + hex);
      }
      auto& m = s.time_in_collective[comm_of(hex)];
      for (const auto& [rank, v] : ranks.items()) {
        const std::optional<int64_t> parsed = parse_int(rank, INT32_MIN, INT32_MAX);
        if (!parsed) throw std::out_of_range("rank '" + rank + "'");
        const int r = rank_ok(static_cast<int>(*parsed));
        m[r] = {static_cast<size_t>(doc_integer(v.at(0), "collectives", 0, INT64_MAX)),
                v.at(1).get<double>()};
      }
    }
    return true;
  });
  if (ok) *out = std::move(s);
  return ok;
}

SlowReport merge_slow_reports(const SlowReport& mine, const std::vector<NodeSlowSummary>& nodes) {
  SlowReport out = mine;
  out.stragglers.clear();
  // Every node's time in each communicator, by rank.
  std::map<uint64_t, std::map<int, double>> in_collective;
  for (const NodeSlowSummary& n : nodes) {
    for (const auto& [comm, ranks] : n.time_in_collective) {
      for (const auto& [rank, v] : ranks) in_collective[comm][rank] = v.second;
    }
  }
  for (const NodeSlowSummary& n : nodes) {
    for (const Straggler& s : n.stragglers) {
      // Another rank, on any node, spends less time in these collectives:
      // it arrives later still, so this node's last is not the job's.
      bool confirmed = true;
      const auto c = in_collective.find(s.comm);
      if (c != in_collective.end()) {
        const auto me = c->second.find(s.rank);
        for (const auto& [rank, t] : c->second) {
          if (me != c->second.end() && rank != s.rank && t < me->second) confirmed = false;
        }
      }
      if (confirmed) out.stragglers.push_back(s);
    }
  }
  std::sort(out.stragglers.begin(), out.stragglers.end(),
            [](const Straggler& a, const Straggler& b) { return a.wait_caused_s > b.wait_caused_s; });
  out.summary = stragglers_summary(out.stragglers);
  return out;
}

std::vector<NodeSlowSummary> reduce_slow_summaries(const std::vector<NodeSlowSummary>& nodes) {
  // Per communicator holding a straggler, its lowest time: (time, rank,
  // index in `nodes`). A straggler is refuted by a rank quicker than it:
  // by the quickest if by any (and the quickest refutes no one as quick).
  using Entry = std::tuple<double, int, size_t>;
  std::map<uint64_t, std::optional<Entry>> lowest;
  for (const NodeSlowSummary& n : nodes) {
    for (const Straggler& s : n.stragglers) lowest[s.comm];
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& [comm, ranks] : nodes[i].time_in_collective) {
      const auto it = lowest.find(comm);
      if (it == lowest.end()) continue;
      for (const auto& [rank, v] : ranks) {
        const Entry e{v.second, rank, i};
        if (!it->second || e < *it->second) it->second = e;
      }
    }
  }
  std::vector<NodeSlowSummary> out(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    out[i].node = nodes[i].node;
    out[i].unix_s = nodes[i].unix_s;
    out[i].stragglers = nodes[i].stragglers;
    for (const Straggler& s : nodes[i].stragglers) {
      const auto c = nodes[i].time_in_collective.find(s.comm);
      if (c == nodes[i].time_in_collective.end()) continue;
      const auto r = c->second.find(s.rank);
      if (r != c->second.end()) out[i].time_in_collective[s.comm][s.rank] = r->second;
    }
  }
  for (const auto& [comm, e] : lowest) {
    if (!e) continue;
    const auto& [t, rank, i] = *e;
    out[i].time_in_collective[comm][rank] = nodes[i].time_in_collective.at(comm).at(rank);
  }
  std::vector<NodeSlowSummary> kept;
  for (NodeSlowSummary& n : out) {
    if (!n.stragglers.empty() || !n.time_in_collective.empty()) kept.push_back(std::move(n));
  }
  return kept;
}

}  // namespace xpu_timer::supervisor
