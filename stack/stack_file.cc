#include "stack/stack_file.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace xpu_timer::stack {
namespace {

using nlohmann::json;

std::string hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

uint64_t parse_hex(const json& j) {
  if (!j.is_string()) return 0;
  return strtoull(j.get<std::string>().c_str(), nullptr, 16);
}

json str_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
json line_or_null(int line) { return line > 0 ? json(line) : json(nullptr); }

std::string get_str(const json& j, const char* key) {
  auto it = j.find(key);
  return (it != j.end() && it->is_string()) ? it->get<std::string>() : std::string();
}
int get_int(const json& j, const char* key, int fallback = 0) {
  auto it = j.find(key);
  return (it != j.end() && it->is_number_integer()) ? it->get<int>() : fallback;
}

}  // namespace

std::string stack_file_name(int rank, int world_size) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%05d-%05d.stacktrace", rank, world_size);
  return buf;
}

json to_json(const ProcessStack& s) {
  json doc;
  doc["version"] = s.version;
  doc["rank"] = s.rank;
  doc["world_size"] = s.world_size;
  doc["pid"] = s.pid;
  doc["host"] = s.host;
  doc["process_state"] = s.process_state;
  doc["collected_at"] = s.collected_at;
  doc["stopped_ms"] = s.stopped_ms;
  doc["python_version"] = s.python_version ? json(*s.python_version) : json(nullptr);
  doc["errors"] = s.errors;
  json threads = json::array();
  for (const auto& t : s.threads) {
    json jt;
    jt["tid"] = t.tid;
    jt["name"] = t.name;
    jt["state"] = std::string(1, t.state);
    jt["holds_gil"] = t.holds_gil ? json(*t.holds_gil) : json(nullptr);
    json native = json::array();
    for (const auto& f : t.native) {
      native.push_back({{"pc", hex(f.pc)},
                        {"func", f.func},
                        {"module", f.module},
                        {"offset", hex(f.offset)},
                        {"file", str_or_null(f.file)},
                        {"line", line_or_null(f.line)},
                        {"inlined", f.inlined}});
    }
    json python = json::array();
    for (const auto& f : t.python)
      python.push_back({{"func", f.func}, {"file", f.file}, {"line", f.line}});
    json mixed = json::array();
    for (const auto& f : t.mixed) {
      if (f.python) {
        mixed.push_back({{"kind", "python"}, {"func", f.func}, {"file", f.file}, {"line", f.line}});
      } else {
        mixed.push_back({{"kind", "native"},
                         {"func", f.func},
                         {"module", f.module},
                         {"file", str_or_null(f.file)},
                         {"line", line_or_null(f.line)}});
      }
    }
    jt["native"] = std::move(native);
    jt["python"] = std::move(python);
    jt["mixed"] = std::move(mixed);
    threads.push_back(std::move(jt));
  }
  doc["threads"] = std::move(threads);
  return doc;
}

std::optional<ProcessStack> from_json(const json& doc, std::string* error) {
  try {
    if (!doc.is_object() || get_int(doc, "version") != 1) {
      *error = "not a version 1 stack file";
      return std::nullopt;
    }
    ProcessStack s;
    s.rank = doc.at("rank").get<int>();
    s.world_size = doc.at("world_size").get<int>();
    s.pid = doc.at("pid").get<int>();
    s.host = get_str(doc, "host");
    s.process_state = get_str(doc, "process_state");
    s.collected_at = doc.value("collected_at", 0.0);
    s.stopped_ms = doc.value("stopped_ms", 0.0);
    if (doc.contains("python_version") && doc["python_version"].is_string())
      s.python_version = doc["python_version"].get<std::string>();
    if (doc.contains("errors") && doc["errors"].is_array())
      for (const auto& e : doc["errors"])
        if (e.is_string()) s.errors.push_back(e.get<std::string>());
    for (const auto& jt : doc.at("threads")) {
      ThreadStack t;
      t.tid = jt.at("tid").get<int>();
      t.name = get_str(jt, "name");
      std::string st = get_str(jt, "state");
      t.state = st.empty() ? '?' : st[0];
      if (jt.contains("holds_gil") && jt["holds_gil"].is_boolean())
        t.holds_gil = jt["holds_gil"].get<bool>();
      for (const auto& jf : jt.at("native")) {
        NativeFrame f;
        f.pc = parse_hex(jf.value("pc", json()));
        f.func = get_str(jf, "func");
        f.module = get_str(jf, "module");
        f.offset = parse_hex(jf.value("offset", json()));
        f.file = get_str(jf, "file");
        f.line = get_int(jf, "line");
        f.inlined = jf.value("inlined", false);
        t.native.push_back(std::move(f));
      }
      for (const auto& jf : jt.at("python")) {
        PythonFrame f;
        f.func = get_str(jf, "func");
        f.file = get_str(jf, "file");
        f.line = get_int(jf, "line");
        t.python.push_back(std::move(f));
      }
      if (jt.contains("mixed")) {
        for (const auto& jf : jt["mixed"]) {
          MixedFrame f;
          f.python = get_str(jf, "kind") == "python";
          f.func = get_str(jf, "func");
          f.module = get_str(jf, "module");
          f.file = get_str(jf, "file");
          f.line = get_int(jf, "line");
          t.mixed.push_back(std::move(f));
        }
      }
      s.threads.push_back(std::move(t));
    }
    return s;
  } catch (const json::exception& e) {
    *error = std::string("malformed stack file: ") + e.what();
    return std::nullopt;
  }
}

bool write_stack_file(const ProcessStack& stack, const std::string& path, std::string* error) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) {
      *error = "cannot write " + tmp + ": " + strerror(errno);
      return false;
    }
    out << to_json(stack).dump(1) << '\n';
    if (!out.good()) {
      *error = "cannot write " + tmp + ": " + strerror(errno);
      return false;
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path + ": " + strerror(errno);
    return false;
  }
  return true;
}

std::optional<ProcessStack> load_stack_file(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot open " + path + ": " + strerror(errno);
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  json doc = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    *error = path + ": not valid JSON";
    return std::nullopt;
  }
  auto s = from_json(doc, error);
  if (!s) *error = path + ": " + *error;
  return s;
}

}  // namespace xpu_timer::stack
