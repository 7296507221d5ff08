#include "common/hang_document.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "common/parse_number.h"
#include "common/rank_set.h"

namespace xpu_timer::hang_document {
namespace {

using nlohmann::json;

// Deeper than any document we write (5 levels, plus what the supervisor's
// opaque parts hold): refused, so that nothing downstream recurses through a
// hostile nesting.
constexpr int kMaxDepth = 64;
// Warning lines kept; the rest are counted in one more line.
constexpr size_t kMaxWarnings = 8;
// The largest rank number accepted (16M ranks).
constexpr int64_t kMaxRank = int64_t{1} << 24;

// Communicators are written as 16 hex digits (what the log and the trace say).
std::string comm_text(uint64_t comm) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(comm));
  return buf;
}

json or_null(const std::optional<uint64_t>& v) { return v ? json(*v) : json(nullptr); }
json name_or_null(const std::string& name) { return name.empty() ? json(nullptr) : json(name); }

json operation_json(const Operation& op) {
  json j;
  j["kind"] = op.kind;
  j["name"] = op.name;
  if (op.comm) j["comm"] = comm_text(*op.comm);
  if (op.seq) j["seq"] = *op.seq;
  j["dtype"] = op.dtype;
  j["bytes"] = op.bytes;
  j["flops"] = op.flops;
  j["group_size"] = op.group_size;
  return j;
}

json rank_json(const Rank& v) {
  json r;
  r["rank"] = v.rank;
  r["state"] = v.state;
  r["registered"] = v.registered;
  r["node"] = v.node ? json(*v.node) : json(nullptr);
  if (v.registered) {
    r["pid"] = v.pid;
    r["local_rank"] = v.local_rank;
    r["host"] = v.host;
    r["heartbeat_age_s"] = v.heartbeat_age_s;
  }
  if (v.state == "silent") r["silent_s"] = v.silent_s;
  if (v.operation) {
    r["operation"] = operation_json(*v.operation);
    r["pending_s"] = v.pending_s;
    r["running_s"] = v.running_s ? json(*v.running_s) : json(nullptr);
  }
  if (v.state == "stuck") r["not_started"] = v.not_started;
  if (v.state == "missing" || v.state == "crashed") r["reason"] = v.reason;
  // Every missing rank has the same keys: null when it is in no stuck
  // communicator.
  if (v.comm || v.state == "missing") {
    r["comm"] = v.comm ? json(comm_text(*v.comm)) : json(nullptr);
    r["comm_name"] = name_or_null(v.comm_name);
    r["seq"] = or_null(v.seq);
    r["issued_seq"] = or_null(v.issued_seq);
    r["last_completed_seq"] = or_null(v.last_completed_seq);
  }
  r["where"] = where_json(v.where);
  r["issued_at"] = where_json(v.issued_at);
  json waits = json::array();
  for (const Rank::WaitFor& w : v.waits_for) {
    waits.push_back({{"rank", w.rank},
                     {"comm", w.comm ? json(comm_text(*w.comm)) : json(nullptr)},
                     {"comm_name", name_or_null(w.comm_name)},
                     {"seq", w.seq}});
  }
  r["waits_for"] = std::move(waits);
  return r;
}

json root_json(const Root& root) {
  return {{"kind", root.kind},
          {"ranks", root.ranks},
          {"ranks_folded", fold_ranks(root.ranks)},
          {"waiters", root.waiters}};
}

json group_json(const Group& g) {
  json o;
  o["operation"] = g.operation;
  o["kind"] = g.kind;
  if (g.comm) {
    o["comm"] = comm_text(*g.comm);
    o["comm_name"] = name_or_null(g.comm_name);
    o["seq"] = g.seq;
  }
  o["ranks"] = g.ranks;
  o["ranks_folded"] = fold_ranks(g.ranks);
  o["missing"] = g.missing;
  o["pending_s"] = g.pending_s;
  o["waiting_s"] = g.waiting_s;  // the hang clock: since it started on the GPU
  o["not_started"] = g.not_started;
  return o;
}

bool is_bool(const json& v) { return v.is_boolean(); }
bool is_string(const json& v) { return v.is_string(); }
bool is_number(const json& v) { return v.is_number(); }
bool is_u64(const json& v) { return v.is_number_unsigned(); }
bool is_u32(const json& v) {
  return v.is_number_unsigned() && v.get<uint64_t>() <= std::numeric_limits<uint32_t>::max();
}
bool is_int(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= std::numeric_limits<int>::max();
  return v.is_number_integer() && v.get<int64_t>() >= std::numeric_limits<int>::min() &&
         v.get<int64_t>() <= std::numeric_limits<int>::max();
}
bool is_rank(const json& v) {
  return v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= kMaxRank;
}
// 1 to 16 hex digits, nothing else.
bool is_comm(const json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty() || s.size() > 16) return false;
  for (const char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Reads the keys of one JSON object into model fields. An absent or null key
// leaves the field as it is; a key of another type is dropped, with a warning
// naming it by its path ("ranks[2].pid").
class Fields {
 public:
  Fields(const json& obj, std::string path, std::vector<std::string>* warnings, size_t* dropped)
      : obj_(obj), path_(std::move(path)), warnings_(warnings), dropped_(dropped) {}

  // The value of `key`, or nullptr when it is absent or null.
  const json* get(const char* key) const {
    const auto it = obj_.find(key);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }

  void drop(const std::string& key, const char* expected) const {
    ++*dropped_;
    if (warnings_->size() < kMaxWarnings) {
      warnings_->push_back((path_.empty() ? key : path_ + "." + key) + ": not " + expected +
                           "; ignored");
    }
  }

  // The value of `key` when it is present and `ok`; dropped when it is not.
  const json* typed(const char* key, bool (*ok)(const json&), const char* expected) const {
    const json* v = get(key);
    if (v == nullptr || ok(*v)) return v;
    drop(key, expected);
    return nullptr;
  }

  void read(const char* key, bool* out) const {
    if (const json* v = typed(key, is_bool, "a boolean")) *out = v->get<bool>();
  }
  void read(const char* key, std::string* out) const {
    if (const json* v = typed(key, is_string, "a string")) *out = v->get<std::string>();
  }
  void read(const char* key, double* out) const {
    if (const json* v = typed(key, is_number, "a number")) *out = v->get<double>();
  }
  void read(const char* key, std::optional<double>* out) const {
    if (const json* v = typed(key, is_number, "a number")) *out = v->get<double>();
  }
  void read(const char* key, uint64_t* out) const {
    if (const json* v = typed(key, is_u64, "an unsigned integer")) *out = v->get<uint64_t>();
  }
  void read(const char* key, std::optional<uint64_t>* out) const {
    if (const json* v = typed(key, is_u64, "an unsigned integer")) *out = v->get<uint64_t>();
  }
  void read(const char* key, uint32_t* out) const {
    if (const json* v = typed(key, is_u32, "a 32-bit unsigned integer")) {
      *out = static_cast<uint32_t>(v->get<uint64_t>());
    }
  }
  void read(const char* key, int* out) const {
    if (const json* v = typed(key, is_int, "a 32-bit integer")) *out = v->get<int>();
  }
  void read(const char* key, std::optional<int>* out) const {
    if (const json* v = typed(key, is_int, "a 32-bit integer")) *out = v->get<int>();
  }
  void read_comm(const char* key, std::optional<uint64_t>* out) const {
    if (const json* v = typed(key, is_comm, "a communicator (16 hex digits)")) {
      *out = parse_uint(v->get_ref<const std::string&>(), 16);
    }
  }
  // A list of ranks: an entry that is no rank number is dropped alone.
  void read(const char* key, std::vector<int>* out) const {
    const json* v = typed(
        key, [](const json& a) { return a.is_array(); }, "an array of ranks");
    if (v == nullptr) return;
    for (const json& e : *v) {
      if (is_rank(e)) {
        out->push_back(e.get<int>());
      } else {
        drop(key, "an array of ranks (an entry)");
      }
    }
  }

 private:
  const json& obj_;
  std::string path_;
  std::vector<std::string>* warnings_;
  size_t* dropped_;
};

}  // namespace

const Rank* Document::find(int rank) const {
  for (const Rank& r : ranks) {
    if (r.rank == rank) return &r;
  }
  return nullptr;
}

std::string Document::stacks_dir() const {
  if (!stacks.is_object()) return "";
  const auto it = stacks.find("dir");
  return it != stacks.end() && it->is_string() ? it->get<std::string>() : "";
}

json where_json(const std::vector<CodeFrame>& where) {
  json out = json::array();
  for (const CodeFrame& f : where) {
    out.push_back(json{{"function", f.function},
                       {"file", f.file},
                       {"line", f.line > 0 ? json(f.line) : json(nullptr)},
                       {"kind", f.python ? "python" : "native"}});
  }
  return out;
}

json to_json(const Document& doc) {
  json j;
  j["version"] = kVersion;
  j["hung"] = doc.hung;
  j["detected_at"] = doc.detected_at ? json(*doc.detected_at) : json(nullptr);
  j["frozen_since"] = doc.frozen_since ? json(*doc.frozen_since) : json(nullptr);
  j["timeout_s"] = doc.timeout_s;
  j["stalled"] = doc.stalled;
  j["stalled_since"] = doc.stalled_since ? json(*doc.stalled_since) : json(nullptr);
  j["summary"] = doc.summary;
  json ranks = json::array();
  for (const Rank& r : doc.ranks) ranks.push_back(rank_json(r));
  j["ranks"] = std::move(ranks);
  json groups = json::array();
  for (const Group& g : doc.groups) groups.push_back(group_json(g));
  j["groups"] = std::move(groups);
  json roots = json::array();
  for (const Root& r : doc.roots) roots.push_back(root_json(r));
  j["roots"] = std::move(roots);
  j["mismatches"] = doc.mismatches.is_array() ? doc.mismatches : json::array();
  j["mismatch_total"] = doc.mismatch_total;
  j["collectives_checked"] = doc.collectives_checked;
  j["coordinator"] = doc.coordinator;
  j["stacks"] = doc.stacks;
  j["timeline"] = doc.timeline;
  return j;
}

std::string to_text(const Document& doc) {
  return to_json(doc).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

Operation read_operation(const Fields& o) {
  Operation p;
  o.read("kind", &p.kind);
  o.read("name", &p.name);
  o.read_comm("comm", &p.comm);
  o.read("seq", &p.seq);
  o.read("dtype", &p.dtype);
  o.read("bytes", &p.bytes);
  o.read("flops", &p.flops);
  o.read("group_size", &p.group_size);
  return p;
}

// A rank's frames under `key` (`where`, `issued_at`): a frame of another
// shape is dropped alone; what is kept is bounded.
void read_frames(const Fields& f, const char* key_name, std::vector<CodeFrame>* out) {
  const json* w = f.typed(
      key_name, [](const json& v) { return v.is_array(); }, "an array");
  if (w == nullptr) return;
  static const json kNull;
  for (const json& frame_json : *w) {
    auto key = [&frame_json](const char* k) -> const json& {
      if (!frame_json.is_object()) return kNull;
      const auto it = frame_json.find(k);
      return it == frame_json.end() ? kNull : *it;
    };
    const json& kind = key("kind");
    const json& file = key("file");
    const json& line = key("line");
    if (!kind.is_string() || !key("function").is_string() ||
        !(file.is_null() || file.is_string()) || !(line.is_null() || is_int(line))) {
      f.drop(key_name, "an array of frames (an entry)");
      continue;
    }
    CodeFrame frame;
    frame.function = key("function").get<std::string>();
    if (file.is_string()) frame.file = file.get<std::string>();
    if (!line.is_null()) frame.line = line.get<int>();
    frame.python = kind.get_ref<const std::string&>() == "python";
    out->push_back(std::move(frame));
    if (out->size() > kMaxWhereFrames) break;
  }
  *out = bounded_where(std::move(*out));
}

void read_rank(const json& e, const Fields& f, Rank* r, std::vector<std::string>* warnings,
               size_t* dropped, const std::string& path) {
  r->rank = e["rank"].get<int>();
  f.read("state", &r->state);
  f.read("registered", &r->registered);
  f.read("node", &r->node);
  f.read("pid", &r->pid);
  f.read("local_rank", &r->local_rank);
  f.read("host", &r->host);
  f.read("heartbeat_age_s", &r->heartbeat_age_s);
  f.read("silent_s", &r->silent_s);
  if (const json* op = f.typed(
          "operation", [](const json& v) { return v.is_object(); }, "an object")) {
    r->operation = read_operation(Fields(*op, path + ".operation", warnings, dropped));
  }
  f.read("pending_s", &r->pending_s);
  f.read("running_s", &r->running_s);
  f.read("not_started", &r->not_started);
  f.read("reason", &r->reason);
  f.read_comm("comm", &r->comm);
  f.read("comm_name", &r->comm_name);
  f.read("seq", &r->seq);
  f.read("issued_seq", &r->issued_seq);
  f.read("last_completed_seq", &r->last_completed_seq);
  read_frames(f, "where", &r->where);
  read_frames(f, "issued_at", &r->issued_at);
  if (const json* w = f.typed(
          "waits_for", [](const json& v) { return v.is_array(); }, "an array")) {
    for (const json& e : *w) {
      if (!e.is_object() || !e.contains("rank") || !is_rank(e["rank"])) {
        f.drop("waits_for", "an array of {\"rank\", ...} (an entry)");
        continue;
      }
      Rank::WaitFor wf;
      wf.rank = e["rank"].get<int>();
      const auto comm = e.find("comm");
      if (comm != e.end() && is_comm(*comm))
        wf.comm = parse_uint(comm->get_ref<const std::string&>(), 16);
      const auto name = e.find("comm_name");
      if (name != e.end() && name->is_string()) wf.comm_name = name->get<std::string>();
      const auto seq = e.find("seq");
      if (seq != e.end() && is_u64(*seq)) wf.seq = seq->get<uint64_t>();
      r->waits_for.push_back(std::move(wf));
      if (static_cast<int64_t>(r->waits_for.size()) > kMaxRank) break;
    }
  }
}

void read_group(const Fields& f, Group* g) {
  f.read("operation", &g->operation);
  f.read("kind", &g->kind);
  f.read_comm("comm", &g->comm);
  f.read("comm_name", &g->comm_name);
  f.read("seq", &g->seq);
  f.read("ranks", &g->ranks);
  f.read("missing", &g->missing);
  f.read("pending_s", &g->pending_s);
  f.read("waiting_s", &g->waiting_s);
  f.read("not_started", &g->not_started);
}

// The version check: true when the document is one this build reads.
bool read_version(const json& j, int* version, std::string* error) {
  const auto v = j.find("version");
  if (v == j.end()) {
    *version = kUnversioned;
    return true;
  }
  if (v->is_number_unsigned() && v->get<uint64_t>() == static_cast<uint64_t>(kVersion)) {
    *version = kVersion;
    return true;
  }
  *error = "hang document version " + v->dump(-1, ' ', false, json::error_handler_t::replace) +
           "; this build reads version " + std::to_string(kVersion);
  return false;
}

}  // namespace

bool parse(std::string_view text, Document* out, std::string* error,
           std::vector<std::string>* warnings) {
  *out = Document{};
  error->clear();
  warnings->clear();
  bool too_deep = false;
  json j = json::parse(
      text.begin(), text.end(),
      [&too_deep](int depth, json::parse_event_t, json&) {
        too_deep |= depth > kMaxDepth;
        return depth <= kMaxDepth;  // what is deeper is not even built
      },
      /*allow_exceptions=*/false);
  if (too_deep) {
    *error = "nested deeper than " + std::to_string(kMaxDepth) + " levels: not a hang document";
    return false;
  }
  if (j.is_discarded()) {
    *error = "not valid JSON";
    return false;
  }
  if (!j.is_object()) {
    *error = "not a JSON object";
    return false;
  }
  if (!read_version(j, &out->version, error)) return false;
  const auto ranks = j.find("ranks");
  if (ranks == j.end() || !ranks->is_array()) {
    *error = "no \"ranks\" array: not a hang report";
    return false;
  }
  size_t dropped = 0;
  const Fields top(j, "", warnings, &dropped);
  top.read("hung", &out->hung);
  top.read("detected_at", &out->detected_at);
  top.read("frozen_since", &out->frozen_since);
  top.read("timeout_s", &out->timeout_s);
  top.read("stalled", &out->stalled);
  top.read("stalled_since", &out->stalled_since);
  top.read("summary", &out->summary);
  for (size_t i = 0; i < ranks->size(); ++i) {
    const json& e = (*ranks)[i];
    const std::string path = "ranks[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("rank") || !is_rank(e["rank"])) {
      top.drop(path, "a rank entry with a valid \"rank\"");
      continue;
    }
    Rank r;
    read_rank(e, Fields(e, path, warnings, &dropped), &r, warnings, &dropped, path);
    out->ranks.push_back(std::move(r));
  }
  if (const json* groups = top.typed(
          "groups", [](const json& v) { return v.is_array(); }, "an array")) {
    for (size_t i = 0; i < groups->size(); ++i) {
      const json& e = (*groups)[i];
      const std::string path = "groups[" + std::to_string(i) + "]";
      if (!e.is_object()) {
        top.drop(path, "an object");
        continue;
      }
      Group g;
      read_group(Fields(e, path, warnings, &dropped), &g);
      out->groups.push_back(std::move(g));
    }
  }
  if (const json* roots = top.typed(
          "roots", [](const json& v) { return v.is_array(); }, "an array")) {
    for (size_t i = 0; i < roots->size(); ++i) {
      const json& e = (*roots)[i];
      const std::string path = "roots[" + std::to_string(i) + "]";
      const auto ranks_of = [](const json& a, std::vector<int>* out) {
        if (!a.is_array()) return false;
        for (const json& x : a) {
          if (!is_rank(x)) return false;
          out->push_back(x.get<int>());
        }
        return true;
      };
      Root root;
      bool ok = e.is_object() && e.contains("kind") && e["kind"].is_string() &&
                e.contains("ranks") && ranks_of(e["ranks"], &root.ranks);
      if (ok) {
        root.kind = e["kind"].get<std::string>();
        const auto waiters = e.find("waiters");
        if (waiters != e.end() && waiters->is_array()) {
          for (const json& level : *waiters) {
            std::vector<int> ranks;
            if (!ranks_of(level, &ranks)) {
              ok = false;
              break;
            }
            root.waiters.push_back(std::move(ranks));
          }
        }
      }
      if (!ok) {
        top.drop(path, "{\"kind\", \"ranks\", \"waiters\"}");
        continue;
      }
      out->roots.push_back(std::move(root));
    }
  }
  top.read("mismatch_total", &out->mismatch_total);
  top.read("collectives_checked", &out->collectives_checked);
  // The supervisor's parts, opaque: moved out of the parsed document, never
  // copied.
  const auto take = [&](const char* key, bool (json::*is_type)() const, const char* expected,
                        json* part) {
    if (top.get(key) == nullptr) return;
    json& v = j[key];
    if ((v.*is_type)()) {
      *part = std::move(v);
    } else {
      top.drop(key, expected);
    }
  };
  take("mismatches", &json::is_array, "an array", &out->mismatches);
  take("coordinator", &json::is_object, "an object", &out->coordinator);
  take("stacks", &json::is_object, "an object", &out->stacks);
  take("timeline", &json::is_object, "an object", &out->timeline);
  if (dropped > warnings->size()) {
    warnings->push_back("and " + std::to_string(dropped - warnings->size()) +
                        " more key(s) ignored");
  }
  return true;
}

}  // namespace xpu_timer::hang_document
