#include "supervisor/analysis/collective_check.h"

#include <algorithm>

#include "common/comm_names.h"
#include "common/hang_document.h"
#include "common/rank_set.h"

namespace xpu_timer::supervisor {
namespace {

using proto::OpName;

bool has_root(uint16_t name) {
  return name == static_cast<uint16_t>(OpName::kBroadcast) ||
         name == static_cast<uint16_t>(OpName::kReduce);
}

bool is_p2p_or_group(const recorder::RecordData& d) {
  return (d.flags & recorder::kRecGroup) || d.group_size > 1 ||
         d.name == static_cast<uint16_t>(OpName::kGroup) ||
         d.name == static_cast<uint16_t>(OpName::kSend) ||
         d.name == static_cast<uint16_t>(OpName::kRecv);
}

// The first field in which `a` and `b` differ, in the order users fix them.
const char* first_difference(const Fingerprint& a, const Fingerprint& b) {
  if (a.name != b.name) return "op";
  if (a.dtype != b.dtype) return "dtype";
  if (a.count != b.count) return "count";
  if (a.root != b.root) return "root";
  if (a.red_op != b.red_op) return "red_op";
  return "";
}

// The distinct nodes of `ranks` (sorted; those of unknown node left out).
std::vector<int> nodes_of(const Mismatch& m, const std::vector<int>& ranks) {
  std::set<int> nodes;
  for (const int r : ranks) {
    auto it = m.nodes.find(r);
    if (it != m.nodes.end()) nodes.insert(it->second);
  }
  return {nodes.begin(), nodes.end()};
}

std::string rank_list(const std::vector<int>& v) {
  std::string s;
  for (const int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

Fingerprint fingerprint_of(const recorder::RecordData& d) {
  Fingerprint f;
  f.name = d.name;
  f.dtype = d.dtype;
  f.red_op = d.red_op;
  f.root = has_root(d.name) ? d.peer : -1;
  f.count = d.count;
  f.group_size = d.group_size;
  f.p2p_or_group = is_p2p_or_group(d);
  return f;
}

std::string fingerprint_text(const Fingerprint& f) {
  std::string s = proto::op_name_str(static_cast<OpName>(f.name));
  if (f.p2p_or_group && f.group_size > 1) s += " of " + std::to_string(f.group_size);
  s += std::string(" ") + proto::dtype_str(static_cast<proto::DType>(f.dtype)) + " x " +
       std::to_string(f.count);
  if (f.root >= 0) s += " root " + std::to_string(f.root);
  const char* op = proto::red_op_str(f.red_op);
  if (*op != '\0') s += std::string(" ") + op;
  return s;
}

Mismatch mismatch_of(uint64_t comm_hash, uint64_t seq, uint32_t nranks,
                     const std::map<int, Fingerprint>& by_rank) {
  Mismatch m;
  m.comm_hash = comm_hash;
  m.seq = seq;
  m.nranks = nranks;
  // Group the ranks by fingerprint, the largest group first.
  for (const auto& [rank, f] : by_rank) {
    auto g = std::find_if(m.groups.begin(), m.groups.end(),
                          [&f = f](const auto& x) { return x.first == f; });
    if (g == m.groups.end()) {
      m.groups.push_back({f, {rank}});
    } else {
      g->second.push_back(rank);
    }
    m.ranks.push_back(rank);
  }
  std::stable_sort(m.groups.begin(), m.groups.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  if (m.groups.size() < 2) return m;
  m.kind = first_difference(m.groups[0].first, m.groups[1].first);
  if (m.groups[0].second.size() > m.groups[1].second.size()) {
    for (size_t i = 1; i < m.groups.size(); ++i) {
      m.odd_ranks.insert(m.odd_ranks.end(), m.groups[i].second.begin(), m.groups[i].second.end());
    }
    std::sort(m.odd_ranks.begin(), m.odd_ranks.end());
  }
  return m;
}

void CollectiveChecker::add(int rank, const recorder::RecordData& d) {
  if (d.kind != static_cast<uint8_t>(proto::OpKind::kNccl) || d.comm_hash == 0 || d.seq == 0) {
    return;
  }
  if (unaligned_.count(d.comm_hash) != 0) return;
  const Key key{d.comm_hash, d.seq};
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= kMaxEntries) {  // forget the oldest first
      while (!order_.empty() && entries_.size() >= kMaxEntries) {
        entries_.erase(order_.front());
        order_.pop_front();
      }
    }
    it = entries_.emplace(key, Entry{}).first;
    it->second.nranks = d.nranks;
    order_.push_back(key);
  }
  Entry& e = it->second;
  // A record is appended once and later updated in place: the same rank's
  // record may be read again (the reader retries torn positions).
  e.by_rank[rank] = fingerprint_of(d);
  const int site = recorder::call_site_of(d);
  if (site >= 0) e.site_by_rank[rank] = site;
  e.last_launch_ns = std::max(e.last_launch_ns, d.launch_ns);
  e.dirty = true;
}

std::vector<Mismatch> CollectiveChecker::check(uint64_t now_ns, double now_unix_s) {
  std::vector<Mismatch> found;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    // Its age counts from the first check that saw it: records are added
    // without a clock, and may be added before the first check of all.
    if (e.first_seen_ns == 0) e.first_seen_ns = std::max<uint64_t>(now_ns, 1);
    const uint64_t comm = it->first.first;
    if (unaligned_.count(comm) != 0) {
      it = entries_.erase(it);
      continue;
    }
    if (e.dirty && e.by_rank.size() >= 2) {
      e.dirty = false;
      // Plain collectives against groups or point-to-point operations at the
      // same number: the ranks' sequences no longer correspond.
      bool any_special = false, any_plain = false;
      for (const auto& [rank, f] : e.by_rank) {
        (f.p2p_or_group ? any_special : any_plain) = true;
      }
      if (any_special && any_plain) {
        unaligned_.insert(comm);
        it = entries_.erase(it);
        continue;
      }
      if (!any_special && !e.reported) {
        bool disagree = false;
        for (const auto& [rank, f] : e.by_rank) {
          disagree = disagree || !(f == e.by_rank.begin()->second);
        }
        const bool everyone = e.nranks > 0 && e.by_rank.size() >= e.nranks;
        const uint64_t settle = cross_node_.count(comm) != 0 ? cross_node_settle_ns_ : kSettleNs;
        if (disagree && e.disagreed_ns == 0) e.disagreed_ns = std::max<uint64_t>(now_ns, 1);
        if (disagree && !everyone && now_ns - std::min(now_ns, e.disagreed_ns) < settle) {
          e.dirty = true;  // look again at the next check, with more members
        } else if (disagree) {
          Mismatch m = mismatch_of(comm, it->first.second, e.nranks, e.by_rank);
          m.comm_name = comm_name(comm);
          m.site_ids = e.site_by_rank;
          m.last_launch_ns = e.last_launch_ns;
          m.detected_ns = now_ns;
          m.detected_at_unix_s = now_unix_s;
          m.summary = mismatch_sentence(m);
          found.push_back(std::move(m));
          e.reported = true;
        }
      }
    }
    // Every member reported (or it is too old to wait for): done with it.
    const bool complete = e.nranks > 0 && e.by_rank.size() >= e.nranks;
    if (complete || now_ns - std::min(now_ns, e.first_seen_ns) > kRetentionNs) {
      if (e.by_rank.size() >= 2) ++compared_;
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  // The order list only bounds memory: drop keys already forgotten.
  while (!order_.empty() && entries_.count(order_.front()) == 0) order_.pop_front();
  return found;
}

void CollectiveChecker::note_comm_names(const Snapshot& snap) {
  for (const RankSample& s : snap.ranks) {
    for (const proto::CommSlot& c : s.comms) {
      if (c.name[0] == '\0' || (c.flags & proto::kCommFlagUnknownIdentity)) continue;
      if (names_.size() >= kMaxNames && names_.count(c.comm_hash) == 0) continue;
      names_[c.comm_hash] = comm_slot_name(c);
    }
  }
}

void CollectiveChecker::note_cross_node(const std::set<uint64_t>& comms) {
  for (const uint64_t comm : comms) {
    if (cross_node_.size() >= kMaxNames) break;
    cross_node_.insert(comm);
  }
}

void CollectiveChecker::mark_reported(uint64_t comm_hash, uint64_t seq) {
  auto it = entries_.find(Key{comm_hash, seq});
  if (it != entries_.end()) it->second.reported = true;
}

std::string CollectiveChecker::comm_name(uint64_t comm_hash) const {
  auto it = names_.find(comm_hash);
  return it != names_.end() ? it->second : std::string();
}

std::string mismatch_sentence(const Mismatch& m) {
  std::string s;
  for (size_t i = 0; i < m.groups.size(); ++i) {
    if (i > 0) s += i + 1 == m.groups.size() ? " and " : ", ";
    s += ranks_phrase(m.groups[i].second) + (i == 0 ? " issued " : " ") +
         fingerprint_text(m.groups[i].first);
  }
  s += " as collective #" + std::to_string(m.seq) + " on comm " + comm_hex(m.comm_hash);
  if (!m.comm_name.empty() && m.nranks > 0) {
    s += " (" + m.comm_name + ", " + std::to_string(m.nranks) + " ranks)";
  } else if (!m.comm_name.empty()) {
    s += " (" + m.comm_name + ")";
  } else if (m.nranks > 0) {
    s += " (" + std::to_string(m.nranks) + " ranks)";
  }
  s += ": " + m.kind + " mismatch";
  if (!m.odd_ranks.empty()) {
    s += ", the odd one out: " + ranks_phrase(m.odd_ranks);
    const std::vector<int> nodes = nodes_of(m, m.odd_ranks);
    if (!nodes.empty()) s += (nodes.size() == 1 ? " on node " : " on nodes ") + rank_list(nodes);
  }
  return s;
}

nlohmann::json issued_at_json(const Mismatch& m) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [rank, f] : m.issued_at) {
    out[std::to_string(rank)] = hang_document::where_json({f});
  }
  return out;
}

nlohmann::json mismatch_json(const Mismatch& m) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [f, ranks] : m.groups) {
    nlohmann::json g = {{"ranks", ranks},
                        {"op", proto::op_name_str(static_cast<OpName>(f.name))},
                        {"dtype", proto::dtype_str(static_cast<proto::DType>(f.dtype))},
                        {"count", f.count},
                        {"fingerprint", fingerprint_text(f)}};
    if (!m.nodes.empty()) g["nodes"] = nodes_of(m, ranks);
    g["root"] = f.root >= 0 ? nlohmann::json(f.root) : nlohmann::json(nullptr);
    const char* op = proto::red_op_str(f.red_op);
    g["red_op"] = *op != '\0' ? nlohmann::json(op) : nlohmann::json(nullptr);
    groups.push_back(std::move(g));
  }
  const nlohmann::json name =
      m.comm_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.comm_name);
  return {{"comm", comm_hex(m.comm_hash)},
          {"comm_name", name},
          {"seq", m.seq},
          {"nranks", m.nranks},
          {"kind", m.kind},
          {"ranks", m.ranks},
          {"odd_ranks", m.odd_ranks},
          // A job of several nodes: the nodes of the odd ranks (null on one node).
          {"odd_nodes",
           m.nodes.empty() ? nlohmann::json(nullptr) : nlohmann::json(nodes_of(m, m.odd_ranks))},
          {"fingerprints", groups},
          {"detected_at_unix_s", m.detected_at_unix_s},
          // From the last rank's host call of this collective to the verdict.
          {"detected_after_s",
           m.last_launch_ns != 0 && m.detected_ns >= m.last_launch_ns
               ? nlohmann::json(static_cast<double>(m.detected_ns - m.last_launch_ns) / 1e9)
               : nlohmann::json(nullptr)},
          {"summary", m.summary},
          // rank -> the Python line that issued its collective (this node's
          // ranks whose flight recorder had it).
          {"issued_at", issued_at_json(m)}};
}

}  // namespace xpu_timer::supervisor
