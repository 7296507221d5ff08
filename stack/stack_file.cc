// The writer and the file-system side of the stack file; the decoding of the
// text is in stack_file_parser.cc.
#include "stack/stack_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "common/file_reader.h"

namespace xpu_timer::stack {
namespace {

using nlohmann::json;

std::string hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

json str_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
json line_or_null(int line) { return line > 0 ? json(line) : json(nullptr); }

std::string errno_text() { return strerror(errno); }

}  // namespace

std::string stack_file_name(int rank, int world_size) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%05d-%05d%.*s", rank, world_size,
           static_cast<int>(kStackFileSuffix.size()), kStackFileSuffix.data());
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

std::string stack_file_text(const ProcessStack& stack, int indent) {
  return to_json(stack).dump(indent, ' ', false, json::error_handler_t::replace);
}

bool write_stack_file(const ProcessStack& stack, const std::string& path, std::string* error) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) {
      *error = "cannot write " + tmp + ": " + errno_text();
      return false;
    }
    out << stack_file_text(stack) << '\n';
    if (!out.good()) {
      *error = "cannot write " + tmp + ": " + errno_text();
      return false;
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path + ": " + errno_text();
    return false;
  }
  return true;
}

bool load_stack_file(const std::string& path, ProcessStack* out, std::string* error,
                     size_t max_bytes) {
  std::string text;
  if (read_regular_file_ok(path, max_bytes, &text, error) && parse_stack_file(text, out, error))
    return true;
  *error = path + ": " + *error;
  return false;
}

std::optional<ProcessStack> load_stack_file(const std::string& path, std::string* error,
                                            size_t max_bytes) {
  ProcessStack stack;
  if (!load_stack_file(path, &stack, error, max_bytes)) return std::nullopt;
  return stack;
}

bool list_stack_files(const std::string& dir, std::vector<std::string>* paths, std::string* error) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    *error = "cannot open folder " + dir + ": " + errno_text();
    return false;
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(d, &::closedir);
  const std::string prefix = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  for (;;) {
    errno = 0;  // readdir's end and its failure differ only by errno
    const dirent* e = ::readdir(d);
    if (e == nullptr) break;
    const std::string_view name(e->d_name);
    if (name.size() <= kStackFileSuffix.size() ||
        name.substr(name.size() - kStackFileSuffix.size()) != kStackFileSuffix) {
      continue;
    }
    const std::string path = prefix + std::string(name);
    struct stat st;
    // Anything but a folder is listed: one that is not a regular file (a FIFO, a
    // device, a socket) or cannot be stat'ed (a symlink loop, a dangling link) is
    // then refused by the loader, which names it and why in one warning without
    // ever blocking on it, and the folder's other files are read.
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) paths->push_back(path);
  }
  if (errno != 0) {
    *error = "cannot list folder " + dir + ": " + errno_text();
    return false;
  }
  std::sort(paths->begin(), paths->end());
  return true;
}

}  // namespace xpu_timer::stack
