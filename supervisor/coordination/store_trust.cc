#include "supervisor/coordination/store_trust.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace xpu_timer::supervisor {
namespace {

// A node number as a key writes it: decimal, no sign, no leading zero, at
// most 6 digits (no job has a million nodes).
int parse_node(const std::string& text) {
  if (text.empty() || text.size() > 6 || (text.size() > 1 && text[0] == '0')) return -1;
  int n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::string format_s(const char* fmt, double v) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

}  // namespace

JobShape job_shape(int world_size, int local_world_size) {
  JobShape j;
  if (world_size <= 0 || local_world_size <= 0 || local_world_size > world_size) return j;
  j.world_size = world_size;
  j.local_world_size = local_world_size;
  j.node_count = (world_size + local_world_size - 1) / local_world_size;
  return j;
}

int node_of_key(const std::string& key, const std::string& dir, bool after_dash) {
  if (key.size() <= dir.size() || key.compare(0, dir.size(), dir) != 0) return -1;
  std::string name = key.substr(dir.size());
  if (after_dash) {
    const size_t dash = name.rfind('-');
    if (dash == std::string::npos) return -1;
    name = name.substr(dash + 1);
  } else {
    name = name.substr(0, name.find('/'));
  }
  return parse_node(name);
}

std::map<int, int64_t> owner_leases(const std::vector<KeyValue>& kvs, const std::string& dir,
                                    const JobShape& job) {
  std::map<int, int64_t> out;
  for (const KeyValue& kv : kvs) {
    const int node = node_of_key(kv.key, dir);
    if (node < 0 || node >= job.node_count || kv.key.size() != dir.size() + std::to_string(node).size()) {
      continue;
    }
    out[node] = kv.lease;
  }
  return out;
}

bool written_by_owner(const KeyValue& kv, int node, const std::map<int, int64_t>& owners,
                      std::string* why) {
  const auto it = owners.find(node);
  if (it == owners.end()) {
    *why = "node " + std::to_string(node) + " has no owner in the job (not one of its nodes)";
    return false;
  }
  if (kv.lease != it->second) {
    *why = "written under lease " + std::to_string(kv.lease) + ", not node " +
           std::to_string(node) + "'s (" + std::to_string(it->second) + ")";
    return false;
  }
  return true;
}

namespace {

std::string node_and_clock_refusal(int node, int key_node, const JobShape& job, double clock_s,
                                   double now_unix_s) {
  if (job.node_count <= 0) return "this node does not know the job's size yet";
  if (node != key_node) {
    return "it names node " + std::to_string(node) + " under node " + std::to_string(key_node) +
           "'s key";
  }
  if (node < 0 || node >= job.node_count) {
    return "node " + std::to_string(node) + " is not in a job of " +
           std::to_string(job.node_count) + " node(s)";
  }
  if (clock_s > now_unix_s + kMaxClockSkewS) {
    return format_s("its clock is %.1f s ahead of this node's", clock_s - now_unix_s) +
           format_s(" (more than %.0f s)", kMaxClockSkewS);
  }
  return "";
}

}  // namespace

std::string document_refusal(const NodeProgress& p, int key_node, const JobShape& job,
                             double now_unix_s) {
  std::string why =
      node_and_clock_refusal(p.node, key_node, job, p.snapshot.now_unix_s, now_unix_s);
  if (!why.empty()) return why;
  if (p.world_size != job.world_size) {
    return "world size " + std::to_string(p.world_size) + ", the job's is " +
           std::to_string(job.world_size);
  }
  if (p.snapshot.ranks.size() > static_cast<size_t>(job.local_world_size)) {
    return std::to_string(p.snapshot.ranks.size()) + " ranks, a node has " +
           std::to_string(job.local_world_size);
  }
  std::set<int> seen;
  for (const RankSample& s : p.snapshot.ranks) {
    if (s.rank < 0 || s.rank >= job.world_size) {
      return "rank " + std::to_string(s.rank) + " is not in a world of " +
             std::to_string(job.world_size);
    }
    if (!seen.insert(s.rank).second) return "rank " + std::to_string(s.rank) + " twice";
    if (s.node != p.node) {
      return "rank " + std::to_string(s.rank) + " says it runs on node " + std::to_string(s.node);
    }
  }
  return "";
}

std::string stamp_refusal(const NodeStamp& st, int key_node, const JobShape& job,
                          double now_unix_s) {
  std::string why = node_and_clock_refusal(st.node, key_node, job, st.now_unix_s, now_unix_s);
  if (!why.empty()) return why;
  if (st.heartbeat_ns.size() > static_cast<size_t>(job.local_world_size)) {
    return std::to_string(st.heartbeat_ns.size()) + " heartbeats, a node has " +
           std::to_string(job.local_world_size) + " ranks";
  }
  return "";
}

std::vector<NodeProgress> without_rank_conflicts(
    const Snapshot& local, std::vector<NodeProgress> docs,
    std::vector<std::pair<int, std::string>>* refused) {
  std::map<int, int> claimed;  // rank -> node (-1: this node)
  for (const RankSample& s : local.ranks) claimed[s.rank] = -1;
  std::sort(docs.begin(), docs.end(),
            [](const NodeProgress& a, const NodeProgress& b) { return a.node < b.node; });
  std::vector<NodeProgress> out;
  for (NodeProgress& p : docs) {
    std::string why;
    for (const RankSample& s : p.snapshot.ranks) {
      const auto it = claimed.find(s.rank);
      if (it != claimed.end()) {
        why = "rank " + std::to_string(s.rank) + " is " +
              (it->second < 0 ? std::string("this node's")
                              : "node " + std::to_string(it->second) + "'s");
        break;
      }
    }
    if (!why.empty()) {
      refused->emplace_back(p.node, why);
      continue;
    }
    for (const RankSample& s : p.snapshot.ranks) claimed[s.rank] = p.node;
    out.push_back(std::move(p));
  }
  return out;
}

bool DumpRequestGate::admit(bool from_owner, bool alarm_standing, double now_s,
                            std::string* why) {
  if (!from_owner) {
    *why = "not from a node of the job";
    return false;
  }
  if (!alarm_standing) {
    *why = "the asking node raises no alarm";
    return false;
  }
  if (now_s - last_admitted_s_ < kMinIntervalS) {
    *why = format_s("another node's request was obeyed %.0f s ago", now_s - last_admitted_s_) +
           format_s(" (at most one every %.0f s)", kMinIntervalS);
    return false;
  }
  last_admitted_s_ = now_s;
  return true;
}

}  // namespace xpu_timer::supervisor
