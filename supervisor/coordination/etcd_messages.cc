#include "supervisor/coordination/etcd_messages.h"

#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/parse_number.h"
#include "supervisor/coordination/base64.h"

namespace xpu_timer::supervisor::etcd {
namespace {

using nlohmann::json;

// A printable excerpt of untrusted text for an error line.
std::string excerpt(const std::string& s, size_t max = 200) {
  std::string out;
  for (char c : s.substr(0, max)) {
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  }
  if (s.size() > max) out += "...";
  return out;
}

// Parses `text` as one JSON document; false with the parser's reason.
bool parse(const std::string& text, json* out, std::string* error) {
  try {
    *out = json::parse(text);
  } catch (const json::exception& e) {
    *error = std::string("not JSON (") + e.what() + "): \"" + excerpt(text, 80) + "\"";
    return false;
  }
  return true;
}

// The member `name` of `obj`, or null when `obj` is not an object or lacks it.
const json* member(const json& obj, const char* name) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(name);
  return it == obj.end() ? nullptr : &*it;
}

// An int64 field as the gateway writes it: a decimal string (or, from other
// gateways, a JSON integer). Absent means 0 (proto3 leaves zeros out).
bool read_int64(const json& obj, const char* name, int64_t* out, std::string* error) {
  const json* v = member(obj, name);
  *out = 0;
  if (v == nullptr || v->is_null()) return true;
  if (v->is_number_integer() && !v->is_number_unsigned()) {
    *out = v->get<int64_t>();
    return true;
  }
  if (v->is_number_unsigned() && v->get<uint64_t>() <= std::numeric_limits<int64_t>::max()) {
    *out = static_cast<int64_t>(v->get<uint64_t>());
    return true;
  }
  if (v->is_string()) {
    if (const std::optional<int64_t> value = parse_int(v->get_ref<const std::string&>())) {
      *out = *value;
      return true;
    }
  }
  *error = std::string("\"") + name + "\" is not an int64: " + excerpt(v->dump(), 60);
  return false;
}

// A bytes field: base64 in a string; absent means empty.
bool read_bytes(const json& obj, const char* name, std::string* out, std::string* error) {
  const json* v = member(obj, name);
  out->clear();
  if (v == nullptr || v->is_null()) return true;
  if (!v->is_string()) {
    *error = std::string("\"") + name + "\" is not a string";
    return false;
  }
  std::string why;
  if (!base64_decode(v->get_ref<const std::string&>(), out, &why)) {
    *error = std::string("\"") + name + "\": " + why;
    return false;
  }
  return true;
}

// etcd's message in an error answer: {"error": "...", "message": "...",
// "code": N} from a unary call, {"error": {"message": ...}} from a stream.
std::string error_message(const json& doc) {
  const auto text = [](const json* v) {
    return v != nullptr && v->is_string() ? excerpt(v->get_ref<const std::string&>()) : "";
  };
  std::string m = text(member(doc, "message"));
  if (m.empty()) m = text(member(doc, "error"));
  if (m.empty() && member(doc, "error") != nullptr)
    m = text(member(*member(doc, "error"), "message"));
  return m;
}

bool is_lease_not_found(const std::string& message) {
  return message.find("lease not found") != std::string::npos;
}

// Common to every answer: parses the body into `doc`; a non-200 status is
// an error (or kLeaseNotFound) with etcd's message.
Outcome open_answer(int status, const std::string& body, json* doc, std::string* error) {
  if (status != 200) {
    json parsed;
    std::string ignored;
    const std::string message = parse(body, &parsed, &ignored) ? error_message(parsed) : "";
    if (is_lease_not_found(message)) {
      *error = message;
      return Outcome::kLeaseNotFound;
    }
    *error = "HTTP " + std::to_string(status) + ": " +
             (message.empty() ? "\"" + excerpt(body, 80) + "\"" : message);
    return Outcome::kFailed;
  }
  if (!parse(body, doc, error)) return Outcome::kFailed;
  if (!doc->is_object()) {
    *error = "the answer is not a JSON object: " + excerpt(doc->dump(), 60);
    return Outcome::kFailed;
  }
  return Outcome::kOk;
}

json int64_string(int64_t v) { return std::to_string(v); }

}  // namespace

std::string prefix_range_end(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    unsigned char& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string lease_grant_request(int64_t ttl_s) {
  return json{{"TTL", int64_string(ttl_s)}, {"ID", "0"}}.dump();
}

std::string lease_keepalive_request(int64_t lease) {
  return json{{"ID", int64_string(lease)}}.dump();
}

std::string put_request(const std::string& key, const std::string& value, int64_t lease) {
  return json{
      {"key", base64_encode(key)}, {"value", base64_encode(value)}, {"lease", int64_string(lease)}}
      .dump();
}

namespace {

// The RangeRequest of every key under `prefix` (from `min_mod_revision` when
// > 0), as /v3/kv/range takes it and a transaction's request_range holds it.
json range_prefix_json(const std::string& prefix, int64_t min_mod_revision) {
  // etcd reads key "\0" with range_end "\0" as every key.
  const std::string key = prefix.empty() ? std::string(1, '\0') : prefix;
  json request = {{"key", base64_encode(key)},
                  {"range_end", base64_encode(prefix_range_end(prefix))}};
  if (min_mod_revision > 0) request["min_mod_revision"] = int64_string(min_mod_revision);
  return request;
}

}  // namespace

std::string range_prefix_request(const std::string& prefix, int64_t min_mod_revision) {
  return range_prefix_json(prefix, min_mod_revision).dump();
}

std::string ranges_request(const std::vector<PrefixQuery>& queries) {
  json ops = json::array();
  for (const PrefixQuery& q : queries) {
    ops.push_back(json{{"request_range", range_prefix_json(q.prefix, q.min_mod_revision)}});
  }
  return json{{"success", std::move(ops)}}.dump();
}

std::string delete_request(const std::string& key) {
  return json{{"key", base64_encode(key)}}.dump();
}

std::string create_request(const std::string& key, const std::string& value, int64_t lease) {
  // Compare create_revision == 0: true only while the key does not exist.
  // grpc-gateway takes the enums by name.
  const std::string k = base64_encode(key);
  json put = {{"key", k}, {"value", base64_encode(value)}, {"lease", int64_string(lease)}};
  return json{{"compare", json::array({json{{"key", k},
                                            {"result", "EQUAL"},
                                            {"target", "CREATE"},
                                            {"create_revision", "0"}}})},
              {"success", json::array({json{{"request_put", std::move(put)}}})}}
      .dump();
}

std::string authenticate_request(const std::string& name, const std::string& password) {
  return json{{"name", name}, {"password", password}}.dump();
}

Outcome read_grant(int status, const std::string& body, int64_t* lease, int64_t* ttl_s,
                   std::string* error) {
  json doc;
  const Outcome o = open_answer(status, body, &doc, error);
  if (o != Outcome::kOk) return o;
  const json* e = member(doc, "error");
  if (e != nullptr && e->is_string() && !e->get_ref<const std::string&>().empty()) {
    *error = "lease grant refused: " + excerpt(e->get_ref<const std::string&>());
    return Outcome::kFailed;
  }
  if (!read_int64(doc, "ID", lease, error) || !read_int64(doc, "TTL", ttl_s, error)) {
    return Outcome::kFailed;
  }
  if (*lease == 0 || *ttl_s <= 0) {
    *error = "lease grant answered without a lease: " + excerpt(body, 80);
    return Outcome::kFailed;
  }
  return Outcome::kOk;
}

Outcome read_keepalive(int status, const std::string& body, int64_t* ttl_s, std::string* error) {
  // The first non-empty line of the stream.
  size_t start = 0;
  while (start < body.size() && std::isspace(static_cast<unsigned char>(body[start]))) ++start;
  const size_t end = body.find('\n', start);
  const std::string first = body.substr(start, end == std::string::npos ? end : end - start);
  if (status == 200 && first.empty()) {
    *error = "empty keepalive answer";
    return Outcome::kFailed;
  }
  json doc;
  const Outcome o = open_answer(status, first, &doc, error);
  if (o != Outcome::kOk) return o;
  const json* result = member(doc, "result");
  if (result == nullptr || !result->is_object()) {
    const std::string message = error_message(doc);
    if (is_lease_not_found(message)) {
      *error = message;
      return Outcome::kLeaseNotFound;
    }
    *error = message.empty() ? "keepalive answer without \"result\": " + excerpt(first, 80)
                             : "keepalive failed: " + message;
    return Outcome::kFailed;
  }
  if (!read_int64(*result, "TTL", ttl_s, error)) return Outcome::kFailed;
  if (*ttl_s <= 0) {
    *error = "the lease expired";
    return Outcome::kLeaseNotFound;
  }
  return Outcome::kOk;
}

Outcome read_put(int status, const std::string& body, std::string* error) {
  json doc;
  return open_answer(status, body, &doc, error);
}

namespace {

// A range answer's object (the body of /v3/kv/range, or a transaction's
// response_range).
Outcome read_range_doc(const json& doc, std::vector<KeyValue>* out, int64_t* revision,
                       std::string* error, int64_t* count) {
  out->clear();
  const json* header = member(doc, "header");
  if (header == nullptr || !header->is_object()) {
    *error = "range answer without a \"header\" object";
    return Outcome::kFailed;
  }
  int64_t rev = 0;
  std::string why;
  if (!read_int64(*header, "revision", &rev, &why)) {
    *error = "header: " + why;
    return Outcome::kFailed;
  }
  if (revision != nullptr) *revision = rev;
  int64_t in_range = 0;  // left out when the range is empty
  if (!read_int64(doc, "count", &in_range, error)) return Outcome::kFailed;
  if (count != nullptr) *count = in_range;
  const json* kvs = member(doc, "kvs");
  if (kvs == nullptr || kvs->is_null()) return Outcome::kOk;  // no key matched
  if (!kvs->is_array()) {
    *error = "\"kvs\" is not an array";
    return Outcome::kFailed;
  }
  out->reserve(kvs->size());
  for (size_t i = 0; i < kvs->size(); ++i) {
    const json& kv = (*kvs)[i];
    KeyValue item;
    std::string why;
    if (!kv.is_object()) {
      why = "not an object";
    } else if (member(kv, "key") == nullptr) {
      why = "no \"key\"";
    } else if (read_bytes(kv, "key", &item.key, &why) &&
               read_bytes(kv, "value", &item.value, &why) &&
               read_int64(kv, "mod_revision", &item.mod_revision, &why) &&
               read_int64(kv, "lease", &item.lease, &why)) {
      out->push_back(std::move(item));
      continue;
    }
    *error = "kvs[" + std::to_string(i) + "]: " + why;
    out->clear();
    return Outcome::kFailed;
  }
  return Outcome::kOk;
}

}  // namespace

Outcome read_range(int status, const std::string& body, std::vector<KeyValue>* out,
                   int64_t* revision, std::string* error, int64_t* count) {
  out->clear();
  json doc;
  const Outcome o = open_answer(status, body, &doc, error);
  if (o != Outcome::kOk) return o;
  return read_range_doc(doc, out, revision, error, count);
}

Outcome read_ranges(int status, const std::string& body, size_t n, std::vector<PrefixAnswer>* out,
                    std::string* error) {
  out->clear();
  json doc;
  const Outcome o = open_answer(status, body, &doc, error);
  if (o != Outcome::kOk) return o;
  const json* responses = member(doc, "responses");
  if (responses == nullptr || !responses->is_array() || responses->size() != n) {
    *error = "transaction answer without " + std::to_string(n) + " responses";
    return Outcome::kFailed;
  }
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    const json& r = (*responses)[i];
    const json* range = r.is_object() ? member(r, "response_range") : nullptr;
    std::string why = "not a response_range object";
    if (range != nullptr && range->is_object() &&
        read_range_doc(*range, &(*out)[i].kvs, &(*out)[i].revision, &why, &(*out)[i].count) ==
            Outcome::kOk) {
      continue;
    }
    *error = "responses[" + std::to_string(i) + "]: " + why;
    out->clear();
    return Outcome::kFailed;
  }
  return Outcome::kOk;
}

Outcome read_create(int status, const std::string& body, bool* created, std::string* error) {
  json doc;
  const Outcome o = open_answer(status, body, &doc, error);
  if (o != Outcome::kOk) return o;
  const json* ok = member(doc, "succeeded");
  if (ok != nullptr && !ok->is_boolean()) {
    *error = "\"succeeded\" is not a boolean";
    return Outcome::kFailed;
  }
  *created = ok != nullptr && ok->get<bool>();  // left out when false
  return Outcome::kOk;
}

Outcome read_authenticate(int status, const std::string& body, std::string* token,
                          std::string* error) {
  json doc;
  const Outcome o = open_answer(status, body, &doc, error);
  if (o != Outcome::kOk) return o;
  const json* t = member(doc, "token");
  if (t == nullptr || !t->is_string() || t->get_ref<const std::string&>().empty()) {
    *error = "authenticate answer without a \"token\"";
    return Outcome::kFailed;
  }
  // Sent back as a header: refuse what would split it.
  for (const char c : t->get_ref<const std::string&>()) {
    if (c < 0x21 || c > 0x7e) {
      *error = "authenticate answer: the token holds a control character or a space";
      return Outcome::kFailed;
    }
  }
  *token = t->get<std::string>();
  return Outcome::kOk;
}

bool is_auth_rejected(int status, const std::string& body) {
  // etcd 3.4/3.5's gateway: HTTP 401 with "etcdserver: invalid auth token"
  // once a token expired (or the server restarted), "user name is empty"
  // without one.
  return status == 401 || body.find("invalid auth token") != std::string::npos ||
         body.find("user name is empty") != std::string::npos;
}

Outcome read_delete(int status, const std::string& body, std::string* error) {
  json doc;
  const Outcome o = open_answer(status, body, &doc, error);
  if (o != Outcome::kOk) return o;
  int64_t deleted = 0;
  return read_int64(doc, "deleted", &deleted, error) ? Outcome::kOk : Outcome::kFailed;
}

}  // namespace xpu_timer::supervisor::etcd
