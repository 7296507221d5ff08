#include "timeline/hang_verdict.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

namespace xpu_timer::timeline {
namespace {

using nlohmann::json;

// hang.json writes communicators as 16 hex digits.
std::optional<uint64_t> parse_comm(const json& v) {
  if (!v.is_string()) return std::nullopt;
  const std::string s = v.get<std::string>();
  if (s.empty() || s.size() > 16) return std::nullopt;
  char* end = nullptr;
  const unsigned long long c = std::strtoull(s.c_str(), &end, 16);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return static_cast<uint64_t>(c);
}

std::optional<uint64_t> parse_u64(const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

std::string parse_str(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

const VerdictRank* HangVerdict::find(int rank) const {
  for (const VerdictRank& r : ranks) {
    if (r.rank == rank) return &r;
  }
  return nullptr;
}

bool parse_hang_verdict(const std::string& text, HangVerdict* out, std::string* error,
                        std::string* warning) {
  *out = HangVerdict{};
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "not a JSON object";
    return false;
  }
  auto note = [&](const std::string& why) {
    if (warning->empty()) *warning = why;
  };
  if (const auto it = j.find("hung"); it != j.end() && it->is_boolean()) {
    out->hung = it->get<bool>();
  } else {
    note("\"hung\" is missing or not a boolean");
  }
  if (const auto it = j.find("detected_at"); it != j.end() && it->is_number()) {
    out->detected_at_unix_s = it->get<double>();
  }
  if (const auto it = j.find("timeout_s"); it != j.end() && it->is_number()) {
    out->timeout_s = it->get<double>();
  }
  out->summary = parse_str(j, "summary");
  const auto ranks = j.find("ranks");
  if (ranks == j.end() || !ranks->is_array()) {
    note("\"ranks\" is missing or not an array");
    return true;
  }
  for (const json& r : *ranks) {
    const auto rank = r.is_object() ? r.find("rank") : r.end();
    if (!r.is_object() || rank == r.end() || !rank->is_number_integer() ||
        rank->get<int64_t>() < 0 || rank->get<int64_t>() > (1 << 24)) {
      note("a rank entry without a valid \"rank\" was skipped");
      continue;
    }
    VerdictRank v;
    v.rank = static_cast<int>(rank->get<int64_t>());
    v.state = parse_str(r, "state");
    v.reason = parse_str(r, "reason");
    if (const auto c = r.find("comm"); c != r.end()) v.comm = parse_comm(*c);
    v.seq = parse_u64(r, "seq");
    v.last_completed_seq = parse_u64(r, "last_completed_seq");
    if (const auto op = r.find("operation"); op != r.end() && op->is_object()) {
      v.op = parse_str(*op, "name");
      // A stuck rank names its communicator inside the operation.
      if (!v.comm) {
        if (const auto c = op->find("comm"); c != op->end()) v.comm = parse_comm(*c);
      }
      if (!v.seq) v.seq = parse_u64(*op, "seq");
    }
    out->ranks.push_back(std::move(v));
  }
  return true;
}

}  // namespace xpu_timer::timeline
