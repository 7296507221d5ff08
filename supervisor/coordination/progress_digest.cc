#include "supervisor/coordination/progress_digest.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <utility>

#include "common/parse_number.h"
#include "supervisor/analysis/store_document.h"

namespace xpu_timer::supervisor {

namespace {
using nlohmann::json;
constexpr int kDigestFormat = 1;
constexpr int kSlowDigestFormat = 1;
constexpr double kNsPerS = 1e9;
}  // namespace

uint64_t plain_nodes_hash(const std::map<int, uint64_t>& docs) {
  // FNV-1a over the pairs, in node order.
  uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (const auto& [node, doc] : docs) {
    mix(static_cast<uint64_t>(node));
    mix(doc);
  }
  return h;
}

bool stamp_is_plain(const NodeStamp& st, const NodeProgress& d, double digest_unix_s) {
  if (st.doc != d.doc || st.node != d.node || st.heartbeat_ns.size() != d.snapshot.ranks.size()) {
    return false;
  }
  if (!(st.now_unix_s >= digest_unix_s - kPlainLagS) || st.now_ns < d.snapshot.now_ns) return false;
  for (const uint64_t beat : st.heartbeat_ns) {
    // Unsigned: a heartbeat after the stamp's instant is as good as stopped.
    if (beat == 0 || st.now_ns - beat > static_cast<uint64_t>(kPlainBeatS * kNsPerS)) return false;
  }
  const double mono_s = static_cast<double>(st.now_ns - d.snapshot.now_ns) / kNsPerS;
  const double wall_s = st.now_unix_s - d.snapshot.now_unix_s;
  return std::fabs(mono_s - wall_s) <= kClockSlackS;
}

NodeStamp plain_stamp(const NodeProgress& d, double fresh_unix_s) {
  NodeStamp st;
  st.node = d.node;
  st.doc = d.doc;
  st.now_unix_s = fresh_unix_s;
  // The node's monotonic clock at fresh_unix_s, less the slack the leader
  // allowed: never later than it was.
  const double since_s = fresh_unix_s - d.snapshot.now_unix_s - kClockSlackS;
  st.now_ns = d.snapshot.now_ns;
  if (since_s > 0) st.now_ns += static_cast<uint64_t>(std::min(since_s, 1e9) * kNsPerS);
  st.heartbeat_ns.assign(d.snapshot.ranks.size(), st.now_ns);
  return st;
}

std::string progress_digest_text(const ProgressDigest& d) {
  return json{{"format", kDigestFormat},          {"leader", d.leader},
              {"now_unix_s", d.now_unix_s}, {"fresh_unix_s", d.fresh_unix_s},
              {"plain_hash", d.plain_hash}, {"stamps", d.stamps}}
      .dump();
}

bool parse_progress_digest(const std::string& text, ProgressDigest* out, std::string* error) {
  return parse_store_document(text, kDigestFormat, error, [&](const json& j) {
    ProgressDigest d;
    d.leader = doc_get<int>(j.at("leader"), "leader");
    d.now_unix_s = j.at("now_unix_s").get<double>();
    d.fresh_unix_s = j.at("fresh_unix_s").get<double>();
    d.plain_hash = doc_get<uint64_t>(j.at("plain_hash"), "plain_hash");
    const json& stamps = j.at("stamps");
    if (!stamps.is_array()) throw std::out_of_range("stamps: not an array");
    for (const json& s : stamps) d.stamps.push_back(s.get<std::string>());
    if (d.leader < 0 || !std::isfinite(d.now_unix_s) || !std::isfinite(d.fresh_unix_s) ||
        d.fresh_unix_s > d.now_unix_s) {
      *error = "leader, now_unix_s or fresh_unix_s out of range";
      return false;
    }
    *out = std::move(d);
    return true;
  });
}

std::string slow_digest_text(const SlowDigest& d) {
  json summaries = json::object();
  for (const auto& [node, text] : d.summaries) summaries[std::to_string(node)] = text;
  return json{{"format", kSlowDigestFormat},
              {"leader", d.leader},
              {"now_unix_s", d.now_unix_s},
              {"summaries", std::move(summaries)}}
      .dump();
}

bool parse_slow_digest(const std::string& text, int node_count, SlowDigest* out,
                       std::string* error) {
  return parse_store_document(text, kSlowDigestFormat, error, [&](const json& j) {
    SlowDigest d;
    d.leader = static_cast<int>(doc_integer(j.at("leader"), "leader", 0, node_count - 1));
    d.now_unix_s = j.at("now_unix_s").get<double>();
    if (!std::isfinite(d.now_unix_s)) throw std::out_of_range("now_unix_s");
    const json& s = j.at("summaries");
    if (!s.is_object() || s.size() > static_cast<size_t>(std::max(node_count, 0))) {
      throw std::out_of_range("summaries: not an object of at most one per node");
    }
    for (const auto& [node, summary] : s.items()) {
      const std::optional<int64_t> n = parse_int(node, 0, node_count - 1);
      if (!n || node != std::to_string(*n)) {
        throw std::out_of_range("summaries: '" + node.substr(0, 20) + "' is not a node of the job");
      }
      d.summaries[static_cast<int>(*n)] = summary.get<std::string>();
    }
    *out = std::move(d);
    return true;
  });
}

}  // namespace xpu_timer::supervisor
