#include "supervisor/analysis/job_fingerprints.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "supervisor/analysis/store_document.h"

namespace xpu_timer::supervisor {
namespace {

using nlohmann::json;

constexpr int kFormat = 1;
// Bounds on what a document from another host may hold.
constexpr size_t kMaxMembers = 1 << 16;
constexpr size_t kMaxRuns = 1 << 16;
constexpr uint64_t kMaxRunLength = 1 << 20;

// Fingerprints equal in every field the document carries.
bool same(const Fingerprint& a, const Fingerprint& b) {
  return a == b && a.group_size == b.group_size && a.p2p_or_group == b.p2p_or_group;
}

json fp_json(const Fingerprint& f) {
  return json::array(
      {f.name, f.dtype, f.red_op, f.root, f.count, f.group_size, f.p2p_or_group ? 1 : 0});
}

Fingerprint parse_fp(const json& j) {
  if (!j.is_array() || j.size() != 7) throw std::out_of_range("fingerprint: not an array of 7");
  Fingerprint f;
  f.name = doc_get<uint16_t>(j.at(0), "name");
  f.dtype = doc_get<uint8_t>(j.at(1), "dtype");
  f.red_op = doc_get<uint8_t>(j.at(2), "red_op");
  f.root = doc_get<int32_t>(j.at(3), "root");
  f.count = doc_get<uint64_t>(j.at(4), "count");
  f.group_size = doc_get<uint32_t>(j.at(5), "group_size");
  f.p2p_or_group = doc_get<int>(j.at(6), "p2p_or_group") != 0;
  return f;
}

// The index of `f` in a table of distinct fingerprints, added if new.
size_t fp_index(std::vector<Fingerprint>* table, const Fingerprint& f) {
  for (size_t i = 0; i < table->size(); ++i) {
    if (same((*table)[i], f)) return i;
  }
  table->push_back(f);
  return table->size() - 1;
}

json fp_table_json(const std::vector<Fingerprint>& table) {
  json fps = json::array();
  for (const Fingerprint& f : table) fps.push_back(fp_json(f));
  return fps;
}

std::vector<Fingerprint> parse_fp_table(const json& j) {
  if (!j.is_array() || j.size() > kMaxRuns) throw std::out_of_range("fps: not an array");
  std::vector<Fingerprint> table;
  for (const json& f : j) table.push_back(parse_fp(f));
  return table;
}

const Fingerprint& fp_at(const std::vector<Fingerprint>& table, const json& index) {
  const auto i = doc_get<size_t>(index, "index");
  if (i >= table.size()) throw std::out_of_range("fingerprint index out of range");
  return table[i];
}

}  // namespace

bool CommWindow::at(uint64_t seq, std::map<int, Fingerprint>* by_rank) const {
  auto run = std::upper_bound(runs.begin(), runs.end(), seq,
                              [](uint64_t s, const Run& r) { return s < r.first_seq; });
  if (run == runs.begin()) return false;
  --run;
  if (seq >= run->first_seq + run->count) return false;
  for (const int r : members) (*by_rank)[r] = run->fp;
  for (const Exception& e : exceptions) {
    if (e.seq == seq) (*by_rank)[e.rank] = e.fp;
  }
  return true;
}

std::string node_fingerprints_text(const NodeFingerprints& f) {
  json comms = json::array();
  for (const CommWindow& c : f.comms) {
    std::vector<Fingerprint> table;
    json runs = json::array();
    for (const CommWindow::Run& r : c.runs) {
      runs.push_back(json::array({r.first_seq, r.count, fp_index(&table, r.fp)}));
    }
    json exceptions = json::array();
    for (const CommWindow::Exception& e : c.exceptions) {
      exceptions.push_back(json::array({e.seq, e.rank, fp_index(&table, e.fp)}));
    }
    comms.push_back(json{{"comm", c.comm_hash},
                         {"nranks", c.nranks},
                         {"members", c.members},
                         {"fps", fp_table_json(table)},
                         {"runs", std::move(runs)},
                         {"except", std::move(exceptions)}});
  }
  return json{{"format", kFormat}, {"node", f.node}, {"comms", std::move(comms)}}.dump();
}

bool parse_node_fingerprints(const std::string& text, NodeFingerprints* out, std::string* error) {
  return parse_store_document(text, kFormat, error, [&](const json& j) {
    NodeFingerprints f;
    f.node = doc_get<int>(j.at("node"), "node");
    if (f.node < 0) throw std::out_of_range("node < 0");
    const json& comms = j.at("comms");
    if (!comms.is_array() || comms.size() > FingerprintLog::kMaxComms) {
      throw std::out_of_range("comms: not an array of at most kMaxComms");
    }
    for (const json& cj : comms) {
      CommWindow c;
      c.comm_hash = doc_get<uint64_t>(cj.at("comm"), "comm");
      c.nranks = doc_get<uint32_t>(cj.at("nranks"), "nranks");
      const json& members = cj.at("members");
      if (!members.is_array() || members.size() > kMaxMembers) {
        throw std::out_of_range("members: not an array");
      }
      for (const json& m : members) c.members.push_back(doc_get<int>(m, "value"));
      std::sort(c.members.begin(), c.members.end());
      const std::vector<Fingerprint> table = parse_fp_table(cj.at("fps"));
      const json& runs = cj.at("runs");
      if (!runs.is_array() || runs.size() > kMaxRuns) throw std::out_of_range("runs: not an array");
      uint64_t next = 0;  // runs ascend and do not overlap
      for (const json& r : runs) {
        if (!r.is_array() || r.size() != 3) throw std::out_of_range("run: not an array of 3");
        CommWindow::Run run;
        run.first_seq = doc_get<uint64_t>(r.at(0), "value");
        run.count = doc_get<uint64_t>(r.at(1), "value");
        if (run.count == 0 || run.count > kMaxRunLength || run.first_seq < next ||
            run.first_seq > UINT64_MAX - run.count) {
          throw std::out_of_range("runs: overlapping, empty or too long");
        }
        next = run.first_seq + run.count;
        run.fp = fp_at(table, r.at(2));
        c.runs.push_back(run);
      }
      const json& exceptions = cj.at("except");
      if (!exceptions.is_array() || exceptions.size() > kMaxRuns) {
        throw std::out_of_range("except: not an array");
      }
      for (const json& e : exceptions) {
        if (!e.is_array() || e.size() != 3) throw std::out_of_range("except: not arrays of 3");
        c.exceptions.push_back(
            {doc_get<uint64_t>(e.at(0), "value"), doc_get<int>(e.at(1), "value"), fp_at(table, e.at(2))});
      }
      f.comms.push_back(std::move(c));
    }
    *out = std::move(f);
    return true;
  });
}

void FingerprintLog::note_members(const Snapshot& local) {
  std::map<uint64_t, std::pair<int32_t, std::set<int>>> seen;  // comm -> (size, members)
  for (const RankSample& s : local.ranks) {
    if (!s.registered) continue;
    for (const proto::CommSlot& c : s.comms) {
      if (c.flags & proto::kCommFlagUnknownIdentity) continue;
      auto& [size, members] = seen[c.comm_hash];
      size = c.nranks;
      members.insert(s.rank);
    }
  }
  for (auto& [comm, sm] : seen) {
    const auto& [size, members] = sm;
    if (size <= 0 || members.size() >= static_cast<size_t>(size)) {  // all here
      comms_.erase(comm);
      if (local_only_.size() < kMaxLocalComms) local_only_.insert(comm);
      continue;
    }
    auto it = comms_.find(comm);
    if (it == comms_.end()) {
      if (comms_.size() >= kMaxComms) continue;
      it = comms_.emplace(comm, Comm{}).first;
    }
    const bool was_known = it->second.known;
    it->second.known = true;
    it->second.nranks = static_cast<uint32_t>(size);
    // A member stays one: a rank that restarted registers again with the
    // same communicators, and one whose page is unreadable for a poll must
    // not make the others' numbers look complete.
    it->second.members.insert(members.begin(), members.end());
    if (was_known) continue;
    for (auto s = it->second.by_seq.begin(); s != it->second.by_seq.end();) {
      // Records kept before the pages named the members: only members' count.
      for (auto r = s->second.begin(); r != s->second.end();) {
        r = it->second.members.count(r->first) != 0 ? std::next(r) : s->second.erase(r);
      }
      s = s->second.empty() ? it->second.by_seq.erase(s) : std::next(s);
    }
  }
  // Records of a communicator no page names after a while (one that is not
  // a real communicator's identity) are dropped.
  for (auto it = comms_.begin(); it != comms_.end();) {
    if (!it->second.known && ++it->second.unknown_notes > kMaxUnknownNotes) {
      it = comms_.erase(it);
    } else {
      ++it;
    }
  }
}

void FingerprintLog::add(int rank, const recorder::RecordData& d) {
  if (d.kind != static_cast<uint8_t>(proto::OpKind::kNccl) || d.comm_hash == 0 || d.seq == 0) {
    return;
  }
  auto it = comms_.find(d.comm_hash);
  if (it == comms_.end()) {
    // The ring can be read before the page names the communicator's members:
    // kept until note_members says whether it spans nodes.
    if (local_only_.count(d.comm_hash) != 0 || comms_.size() >= kMaxComms) return;
    it = comms_.emplace(d.comm_hash, Comm{}).first;
  }
  Comm& c = it->second;
  if (c.known && c.members.count(rank) == 0) return;
  if (!c.by_seq.empty() && d.seq + kKeepSeqs <= c.by_seq.rbegin()->first) return;  // too old
  c.by_seq[d.seq][rank] = fingerprint_of(d);
  while (!c.by_seq.empty() && c.by_seq.begin()->first + kKeepSeqs <= c.by_seq.rbegin()->first) {
    c.by_seq.erase(c.by_seq.begin());
  }
}

std::map<int, Fingerprint> FingerprintLog::local_at(uint64_t comm_hash, uint64_t seq) const {
  auto it = comms_.find(comm_hash);
  if (it == comms_.end() || !it->second.known) return {};
  auto s = it->second.by_seq.find(seq);
  if (s == it->second.by_seq.end() || s->second.size() < it->second.members.size()) return {};
  return s->second;
}

std::set<uint64_t> FingerprintLog::comms() const {
  std::set<uint64_t> out;
  for (const auto& [comm, c] : comms_) {
    if (c.known) out.insert(comm);
  }
  return out;
}

std::map<uint64_t, uint64_t> NodeFingerprints::last_seqs() const {
  std::map<uint64_t, uint64_t> out;
  for (const CommWindow& c : comms) {
    if (!c.runs.empty()) out[c.comm_hash] = c.runs.back().first_seq + c.runs.back().count - 1;
  }
  return out;
}

NodeFingerprints FingerprintLog::window(int node, const std::map<uint64_t, uint64_t>& after) const {
  NodeFingerprints out;
  out.node = node;
  for (const auto& [comm, c] : comms_) {
    if (!c.known) continue;
    CommWindow w;
    w.comm_hash = comm;
    w.nranks = c.nranks;
    w.members.assign(c.members.begin(), c.members.end());
    if (!c.by_seq.empty()) {
      const uint64_t last = c.by_seq.rbegin()->first;
      auto done = after.find(comm);
      const uint64_t from = std::max(last >= kPublishSeqs ? last - kPublishSeqs + 1 : 1,
                                     done != after.end() ? done->second + 1 : 1);
      for (auto s = c.by_seq.lower_bound(from); s != c.by_seq.end(); ++s) {
        const auto& [seq, by_rank] = *s;
        if (by_rank.size() < c.members.size()) continue;  // some member has not issued it yet
        const Fingerprint& consensus = by_rank.begin()->second;  // the lowest member's
        CommWindow::Run* run = w.runs.empty() ? nullptr : &w.runs.back();
        if (run != nullptr && run->first_seq + run->count == seq && same(run->fp, consensus)) {
          ++run->count;
        } else {
          w.runs.push_back({seq, 1, consensus});
        }
        for (const auto& [rank, f] : by_rank) {
          if (!same(f, consensus)) w.exceptions.push_back({seq, rank, f});
        }
      }
    }
    out.comms.push_back(std::move(w));
  }
  return out;
}

std::set<int> fingerprint_peers(int my_node, const std::set<uint64_t>& mine,
                                const std::map<int, std::set<uint64_t>>& comms_of_node) {
  std::set<int> peers;
  for (const uint64_t comm : mine) {
    int first = -1, next = -1;  // the smallest other node, the smallest above mine
    for (const auto& [node, comms] : comms_of_node) {  // ascending
      if (node == my_node || comms.count(comm) == 0) continue;
      if (first < 0) first = node;
      if (node > my_node && next < 0) next = node;
    }
    if (next >= 0) {
      peers.insert(next);
    } else if (first >= 0) {
      peers.insert(first);  // the ring wraps around
    }
  }
  return peers;
}

std::vector<Disagreement> compare_windows(const FingerprintLog& log, const NodeFingerprints& other,
                                          const std::map<uint64_t, uint64_t>& after,
                                          std::set<uint64_t>* unaligned,
                                          std::map<uint64_t, uint64_t>* compared_through) {
  std::vector<Disagreement> found;
  for (const CommWindow& w : other.comms) {
    if (unaligned->count(w.comm_hash) != 0) continue;
    auto a = after.find(w.comm_hash);
    const uint64_t done = a != after.end() ? a->second : 0;
    bool stop = false;
    for (const CommWindow::Run& run : w.runs) {
      for (uint64_t seq = std::max(run.first_seq, done + 1);
           !stop && seq < run.first_seq + run.count; ++seq) {
        std::map<int, Fingerprint> by_rank = log.local_at(w.comm_hash, seq);
        if (by_rank.empty()) continue;  // not (or no longer) known here
        w.at(seq, &by_rank);
        bool any_special = false, any_plain = false, differ = false;
        const Fingerprint* first_plain = nullptr;
        for (const auto& [rank, f] : by_rank) {
          if (f.p2p_or_group) {
            any_special = true;
            continue;
          }
          any_plain = true;
          if (first_plain == nullptr) {
            first_plain = &f;
          } else if (!(f == *first_plain)) {
            differ = true;
          }
        }
        if (any_special && any_plain) {
          unaligned->insert(w.comm_hash);
          stop = true;
        } else if (differ) {
          found.push_back({w.comm_hash, seq});
          stop = true;
        } else if (any_plain) {
          uint64_t& through = (*compared_through)[w.comm_hash];
          through = std::max(through, seq);
        }
      }
      if (stop) break;
    }
  }
  return found;
}

Mismatch mismatch_from_windows(uint64_t comm_hash, uint64_t seq,
                               const std::vector<NodeFingerprints>& windows) {
  std::map<int, Fingerprint> by_rank;
  std::map<int, int> nodes;
  uint32_t nranks = 0;
  for (const NodeFingerprints& n : windows) {
    for (const CommWindow& w : n.comms) {
      if (w.comm_hash != comm_hash) continue;
      std::map<int, Fingerprint> here;
      if (!w.at(seq, &here)) continue;
      nranks = std::max(nranks, w.nranks);
      for (const auto& [rank, f] : here) {
        by_rank[rank] = f;
        nodes[rank] = n.node;
      }
    }
  }
  Mismatch m = mismatch_of(comm_hash, seq, nranks, by_rank);
  m.nodes = std::move(nodes);
  return m;
}

std::string job_mismatch_text(const Mismatch& m, int from_node) {
  std::vector<Fingerprint> table;
  json ranks = json::array();
  for (const auto& [f, members] : m.groups) {
    const size_t i = fp_index(&table, f);
    for (const int r : members) {
      auto n = m.nodes.find(r);
      ranks.push_back(json::array({r, n != m.nodes.end() ? n->second : -1, i}));
    }
  }
  return json{{"format", kFormat},         {"from_node", from_node},
              {"comm", m.comm_hash},       {"seq", m.seq},
              {"nranks", m.nranks},        {"fps", fp_table_json(table)},
              {"ranks", std::move(ranks)}, {"detected_at_unix_s", m.detected_at_unix_s}}
      .dump();
}

bool parse_job_mismatch(const std::string& text, Mismatch* out, int* from_node,
                        std::string* error) {
  return parse_store_document(text, kFormat, error, [&](const json& j) {
    const std::vector<Fingerprint> table = parse_fp_table(j.at("fps"));
    const json& ranks = j.at("ranks");
    if (!ranks.is_array() || ranks.size() > kMaxMembers) {
      throw std::out_of_range("ranks: not an array");
    }
    std::map<int, Fingerprint> by_rank;
    std::map<int, int> nodes;
    for (const json& r : ranks) {
      if (!r.is_array() || r.size() != 3) throw std::out_of_range("ranks: not arrays of 3");
      const int rank = doc_get<int>(r.at(0), "value");
      by_rank[rank] = fp_at(table, r.at(2));
      const int node = doc_get<int>(r.at(1), "value");
      if (node >= 0) nodes[rank] = node;
    }
    const double at = j.at("detected_at_unix_s").get<double>();
    if (!std::isfinite(at)) throw std::out_of_range("detected_at_unix_s not finite");
    Mismatch m = mismatch_of(doc_get<uint64_t>(j.at("comm"), "comm"), doc_get<uint64_t>(j.at("seq"), "seq"),
                             doc_get<uint32_t>(j.at("nranks"), "nranks"), by_rank);
    if (m.groups.size() < 2) {
      *error = "no disagreement in it";
      return false;
    }
    m.nodes = std::move(nodes);
    m.detected_at_unix_s = at;
    *from_node = doc_get<int>(j.at("from_node"), "from_node");
    *out = std::move(m);
    return true;
  });
}

}  // namespace xpu_timer::supervisor
