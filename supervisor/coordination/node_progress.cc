#include "supervisor/coordination/node_progress.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "supervisor/analysis/store_document.h"

namespace xpu_timer::supervisor {
namespace {

using nlohmann::json;

// Bumped on an incompatible change of the document or the stamp. 2: the
// document's times are those of its last change; the stamp has the latest.
constexpr int kFormat = 2;

// FNV-1a, 64 bits: a document's id. 0 is kept for "no id".
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

json op_ref_json(const proto::OpRef& o) {
  return json{{"name", o.name},           {"kind", o.kind},
              {"dtype", o.dtype},         {"group_size", o.group_size},
              {"comm", o.comm_hash},      {"seq", o.seq},
              {"launch_ns", o.launch_ns}, {"started_ns", o.started_ns},
              {"bytes", o.bytes},         {"flops", o.flops}};
}

json comm_json(const proto::CommSlot& c) {
  std::string name(c.name, strnlen(c.name, sizeof(c.name)));
  return json{{"comm", c.comm_hash},
              {"nranks", c.nranks},
              {"rank", c.rank},
              {"issued_seq", c.issued_seq},
              {"completed_seq", c.completed_seq},
              {"flags", c.flags},
              {"name", name}};
}

// `with_times` false: the heartbeat as 0 (what a document's id covers).
json sample_json(const RankSample& s, bool with_times) {
  json comms = json::array();
  for (const proto::CommSlot& c : s.comms) comms.push_back(comm_json(c));
  json j = json{{"rank", s.rank},
              {"registered", s.registered},
              {"local_rank", s.local_rank},
              {"node", s.node},
              {"pid", s.pid},
              {"host", s.host},
              {"alive", s.alive},
              {"connected", s.connected},
              {"page_ok", s.page_ok},
              {"registered_ns", s.registered_ns},
              {"heartbeat_ns", with_times ? s.heartbeat_ns : 0},
              {"issued_total", s.issued_total},
              {"completed_total", s.completed_total},
              {"inflight_count", s.inflight_count},
              {"oldest_inflight", op_ref_json(s.oldest_inflight)},
              {"last_completed", op_ref_json(s.last_completed)},
              {"comms", std::move(comms)},
              {"dropped_queue_full", s.dropped_queue_full},
              {"skipped_capture", s.skipped_capture},
              {"hook_errors", s.hook_errors},
              {"queue_depth", s.queue_depth},
              {"page_flags", s.page_flags}};
  // Optional (a reader of a document without it knows no place): a
  // culprit's place, kMaxWhereFrames short frames at most.
  if (!s.where.empty()) {
    json where = json::array();
    for (const CodeFrame& f : s.where) {
      where.push_back(
          json{{"function", f.function}, {"file", f.file}, {"line", f.line}, {"python", f.python}});
    }
    j["where"] = std::move(where);
  }
  return j;
}

// Typed reads that throw json::exception on a wrong type or a missing key
// (caught once, in parse_node_progress).
template <typename T>
T get(const json& j, const char* key) {
  return doc_get<T>(j.at(key), key);  // an integer field must be an integer T holds
}

proto::OpRef parse_op_ref(const json& j) {
  proto::OpRef o{};
  o.name = get<uint16_t>(j, "name");
  o.kind = get<uint8_t>(j, "kind");
  o.dtype = get<uint8_t>(j, "dtype");
  o.group_size = get<uint32_t>(j, "group_size");
  o.comm_hash = get<uint64_t>(j, "comm");
  o.seq = get<uint64_t>(j, "seq");
  o.launch_ns = get<uint64_t>(j, "launch_ns");
  o.started_ns = get<uint64_t>(j, "started_ns");
  o.bytes = get<uint64_t>(j, "bytes");
  o.flops = get<uint64_t>(j, "flops");
  return o;
}

proto::CommSlot parse_comm(const json& j) {
  proto::CommSlot c{};
  c.comm_hash = get<uint64_t>(j, "comm");
  c.nranks = get<int32_t>(j, "nranks");
  c.rank = get<int32_t>(j, "rank");
  c.issued_seq = get<uint64_t>(j, "issued_seq");
  c.completed_seq = get<uint64_t>(j, "completed_seq");
  c.flags = get<uint32_t>(j, "flags");
  const std::string name = get<std::string>(j, "name");
  // Printable ASCII only, cut to the field: the text came from another host.
  size_t n = 0;
  for (const char ch : name) {
    if (n + 1 >= sizeof(c.name)) break;
    c.name[n++] = ch >= 0x20 && ch < 0x7f ? ch : '?';
  }
  c.name[n] = '\0';
  return c;
}

RankSample parse_sample(const json& j) {
  RankSample s;
  s.rank = get<int>(j, "rank");
  s.registered = get<bool>(j, "registered");
  s.local_rank = get<int>(j, "local_rank");
  s.node = get<int>(j, "node");
  s.pid = get<pid_t>(j, "pid");
  s.host = get<std::string>(j, "host");
  s.alive = get<bool>(j, "alive");
  s.connected = get<bool>(j, "connected");
  s.page_ok = get<bool>(j, "page_ok");
  s.registered_ns = get<uint64_t>(j, "registered_ns");
  s.heartbeat_ns = get<uint64_t>(j, "heartbeat_ns");
  s.issued_total = get<uint64_t>(j, "issued_total");
  s.completed_total = get<uint64_t>(j, "completed_total");
  s.inflight_count = get<uint32_t>(j, "inflight_count");
  s.oldest_inflight = parse_op_ref(j.at("oldest_inflight"));
  s.last_completed = parse_op_ref(j.at("last_completed"));
  const json& comms = j.at("comms");
  if (!comms.is_array() || comms.size() > static_cast<size_t>(proto::kMaxComms)) {
    throw std::out_of_range("comms: not an array of at most kMaxComms");
  }
  for (const json& c : comms) s.comms.push_back(parse_comm(c));
  s.dropped_queue_full = get<uint64_t>(j, "dropped_queue_full");
  s.skipped_capture = get<uint64_t>(j, "skipped_capture");
  s.hook_errors = get<uint64_t>(j, "hook_errors");
  s.queue_depth = get<uint64_t>(j, "queue_depth");
  s.page_flags = get<uint32_t>(j, "page_flags");
  if (const auto w = j.find("where"); w != j.end()) {
    if (!w->is_array() || w->size() > kMaxWhereFrames) {
      throw std::out_of_range("where: not an array of at most kMaxWhereFrames");
    }
    for (const json& f : *w) {
      s.where.push_back(CodeFrame{get<std::string>(f, "function"), get<std::string>(f, "file"),
                                  get<int>(f, "line"), get<bool>(f, "python")});
    }
    s.where = bounded_where(std::move(s.where));  // the text came from another host
  }
  return s;
}

// A remote CLOCK_MONOTONIC time on the local clock (0 stays unknown).
struct Rebase {
  uint64_t remote_now_ns;
  uint64_t local_at_ns;  // the local instant the remote snapshot is placed at
  uint64_t operator()(uint64_t t) const {
    if (t == 0) return 0;
    const uint64_t before = remote_now_ns > t ? remote_now_ns - t : 0;
    return local_at_ns > before ? local_at_ns - before : 1;
  }
};

void rebase(RankSample* s, const Rebase& at) {
  s->registered_ns = at(s->registered_ns);
  s->heartbeat_ns = at(s->heartbeat_ns);
  for (proto::OpRef* o : {&s->oldest_inflight, &s->last_completed}) {
    o->launch_ns = at(o->launch_ns);
    o->started_ns = at(o->started_ns);
  }
}

// The document without its id; `with_times` false: its times as 0.
json document_json(const NodeProgress& p, bool with_times) {
  json ranks = json::array();
  for (const RankSample& s : p.snapshot.ranks) ranks.push_back(sample_json(s, with_times));
  return json{{"format", kFormat},
              {"node", p.node},
              {"host", p.host},
              {"world_size", p.world_size},
              {"now_ns", with_times ? p.snapshot.now_ns : 0},
              {"now_unix_s", with_times ? p.snapshot.now_unix_s : 0.0},
              {"ranks", std::move(ranks)}};
}

// The format of a document or stamp, checked first so that another
// version's text says so rather than what it lacks.
}  // namespace

uint64_t node_document_id(const NodeProgress& p) {
  return fnv1a(document_json(p, /*with_times=*/false).dump());
}

uint64_t node_shape_id(const NodeProgress& p) {
  json ranks = json::array();
  for (const RankSample& s : p.snapshot.ranks) {
    json comms = json::array();
    for (const proto::CommSlot& c : s.comms) {
      comms.push_back(json{c.comm_hash, c.nranks, c.rank, c.flags});
    }
    ranks.push_back(json{s.rank, s.registered, s.local_rank, s.node, s.pid, s.host, s.alive,
                         s.connected, std::move(comms)});
  }
  return fnv1a(json{p.node, p.host, p.world_size, std::move(ranks)}.dump());
}

std::string node_progress_text(const NodeProgress& p) {
  json j = document_json(p, /*with_times=*/true);
  j["doc"] = node_document_id(p);
  return j.dump();
}

bool parse_node_progress(const std::string& text, NodeProgress* out, std::string* error) {
  return parse_store_document(text, kFormat, error, [&](const json& j) {
    NodeProgress p;
    p.node = get<int>(j, "node");
    p.doc = get<uint64_t>(j, "doc");
    p.host = get<std::string>(j, "host");
    p.world_size = get<int>(j, "world_size");
    p.snapshot.now_ns = get<uint64_t>(j, "now_ns");
    p.snapshot.now_unix_s = get<double>(j, "now_unix_s");
    const json& ranks = j.at("ranks");
    if (!ranks.is_array()) throw std::out_of_range("ranks: not an array");
    for (const json& r : ranks) p.snapshot.ranks.push_back(parse_sample(r));
    if (p.node < 0 || p.world_size < 0 || !std::isfinite(p.snapshot.now_unix_s)) {
      *error = "node, world_size or now_unix_s out of range";
      return false;
    }
    *out = std::move(p);
    return true;
  });
}

std::string node_stamp_text(const NodeProgress& p) {
  // Heartbeats as their age at the stamp's instant, so that the reader
  // gets them back exactly (modulo 2^64) in about half the digits.
  json ago = json::array();
  for (const RankSample& s : p.snapshot.ranks) {
    ago.push_back(static_cast<int64_t>(p.snapshot.now_ns - s.heartbeat_ns));
  }
  return json{{"format", kFormat},
              {"node", p.node},
              {"doc", node_document_id(p)},
              {"now_ns", p.snapshot.now_ns},
              {"now_unix_s", p.snapshot.now_unix_s},
              {"heartbeat_ago_ns", std::move(ago)}}
      .dump();
}

bool parse_node_stamp(const std::string& text, NodeStamp* out, std::string* error) {
  return parse_store_document(text, kFormat, error, [&](const json& j) {
    NodeStamp st;
    st.node = get<int>(j, "node");
    st.doc = get<uint64_t>(j, "doc");
    st.now_ns = get<uint64_t>(j, "now_ns");
    st.now_unix_s = get<double>(j, "now_unix_s");
    const json& ago = j.at("heartbeat_ago_ns");
    if (!ago.is_array()) throw std::out_of_range("heartbeat_ago_ns: not an array");
    for (const json& a : ago) {
      if (!a.is_number_integer()) throw std::out_of_range("heartbeat_ago_ns: not integers");
      st.heartbeat_ns.push_back(st.now_ns - static_cast<uint64_t>(doc_get<int64_t>(a, "heartbeat")));
    }
    if (st.node < 0 || st.doc == 0 || !std::isfinite(st.now_unix_s)) {
      *error = "node, doc or now_unix_s out of range";
      return false;
    }
    *out = std::move(st);
    return true;
  });
}

bool apply_node_stamp(const NodeStamp& stamp, NodeProgress* p) {
  if (stamp.doc == 0 || stamp.node != p->node || stamp.doc != p->doc ||
      stamp.heartbeat_ns.size() != p->snapshot.ranks.size()) {
    return false;
  }
  p->snapshot.now_ns = stamp.now_ns;
  p->snapshot.now_unix_s = stamp.now_unix_s;
  for (size_t i = 0; i < stamp.heartbeat_ns.size(); ++i) {
    p->snapshot.ranks[i].heartbeat_ns = stamp.heartbeat_ns[i];
  }
  return true;
}

Snapshot merge_job_snapshot(const Snapshot& local, int local_node,
                            const std::vector<NodeProgress>& others, int world_size) {
  std::map<int, RankSample> ranks;
  std::map<int, double> taken_at;  // rank -> wall clock of the snapshot it came from
  for (const RankSample& s : local.ranks) {
    ranks[s.rank] = s;
    taken_at[s.rank] = HUGE_VAL;  // local ranks win
  }
  for (const NodeProgress& p : others) {
    if (p.node == local_node) continue;
    // As of its own instant: the remote snapshot is placed at the local now.
    const Rebase at{p.snapshot.now_ns, local.now_ns};
    for (const RankSample& s : p.snapshot.ranks) {
      auto it = taken_at.find(s.rank);
      if (it != taken_at.end() && it->second >= p.snapshot.now_unix_s) continue;
      RankSample r = s;
      rebase(&r, at);
      r.read_ns = p.snapshot.now_ns;  // on the node's own clock (rank_sample.h)
      ranks[s.rank] = std::move(r);
      taken_at[s.rank] = p.snapshot.now_unix_s;
    }
  }
  for (int r = 0; r < world_size; ++r) {
    if (ranks.count(r) == 0) ranks[r].rank = r;  // never registered anywhere
  }
  Snapshot out;
  out.now_ns = local.now_ns;
  out.now_unix_s = local.now_unix_s;
  out.ranks.reserve(ranks.size());
  for (auto& [rank, s] : ranks) out.ranks.push_back(std::move(s));
  return out;
}

bool wants_job_view(const Snapshot& local, double timeout_s, bool detector_wants) {
  if (detector_wants) return true;
  const auto half = static_cast<uint64_t>(timeout_s * 0.5e9);
  for (const RankSample& s : local.ranks) {
    const uint64_t launched = s.oldest_inflight.launch_ns;
    if (s.registered && s.inflight_count > 0 && launched != 0 && local.now_ns > launched &&
        local.now_ns - launched > half) {
      return true;
    }
  }
  return false;
}

}  // namespace xpu_timer::supervisor
