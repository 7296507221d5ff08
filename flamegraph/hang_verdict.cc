#include "flamegraph/hang_verdict.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

namespace xpu_timer::flamegraph {
namespace {

constexpr size_t kMaxHangFileBytes = 64 << 20;  // 10,000 ranks take a few MB

enum class ReadStatus { kOk, kAbsent, kFailed };

ReadStatus read_file(const std::string& path, std::string* text, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return ReadStatus::kAbsent;
    *error = path + ": cannot open: " + std::strerror(errno);
    return ReadStatus::kFailed;
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<unsigned long long>(st.st_size) > kMaxHangFileBytes) {
    *error = path + ": not a regular file of at most 64 MiB";
    return ReadStatus::kFailed;
  }
  text->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < text->size()) {
    const ssize_t n = ::read(fd, text->data() + done, text->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = path + ": cannot read: " + (n < 0 ? std::strerror(errno) : "file shrank");
      return ReadStatus::kFailed;
    }
    done += static_cast<size_t>(n);
  }
  return ReadStatus::kOk;
}

std::string_view basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string parent_of(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d + "/..";
}

}  // namespace

std::optional<HangVerdict> parse_hang_verdict(std::string_view text, std::string* error) {
  error->clear();
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    *error = "not valid JSON";
    return std::nullopt;
  }
  const auto ranks = doc.find("ranks");
  if (ranks == doc.end() || !ranks->is_array()) {
    *error = "no \"ranks\" array: not a hang report";
    return std::nullopt;
  }
  HangVerdict v;
  if (const auto s = doc.find("summary"); s != doc.end() && s->is_string()) v.summary = *s;
  for (const nlohmann::json& r : *ranks) {
    if (!r.is_object()) continue;
    const auto rank = r.find("rank");
    const auto state = r.find("state");
    if (rank == r.end() || !rank->is_number_integer() || state == r.end() || !state->is_string()) {
      continue;
    }
    const int n = rank->get<int>();
    if (n < 0) continue;
    if (*state == "stuck") v.stuck.push_back(n);
    if (*state == "missing") v.missing.push_back(n);
  }
  if (v.stuck.empty()) return std::nullopt;  // no hang: nothing to name
  std::sort(v.stuck.begin(), v.stuck.end());
  std::sort(v.missing.begin(), v.missing.end());
  return v;
}

std::optional<HangVerdict> find_hang_verdict(const std::string& dir, std::string* warning) {
  warning->clear();
  const std::string own = (dir.empty() ? std::string(".") : dir) + "/hang.json";
  const std::string parent = parent_of(dir.empty() ? std::string(".") : dir) + "/hang.json";
  for (const std::string& path : {own, parent}) {
    std::string text, error;
    const ReadStatus status = read_file(path, &text, &error);
    if (status == ReadStatus::kAbsent) continue;
    if (status == ReadStatus::kFailed) {
      *warning = error + "; the graphs name no hang";
      return std::nullopt;
    }
    if (path == parent) {
      // "." or "stacks-x/" name their folder only once resolved.
      std::string name(basename(dir));
      if (char* real = ::realpath(dir.empty() ? "." : dir.c_str(), nullptr)) {
        name = std::string(basename(real));
        std::free(real);
      }
      // The dump folder's hang.json describes the latest hang: use it only
      // when its stacks are these.
      const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
      const nlohmann::json* stacks_dir = nullptr;
      if (doc.is_object() && doc.contains("stacks") && doc["stacks"].is_object() &&
          doc["stacks"].contains("dir") && doc["stacks"]["dir"].is_string()) {
        stacks_dir = &doc["stacks"]["dir"];
      }
      if (stacks_dir == nullptr || basename(stacks_dir->get_ref<const std::string&>()) != name) {
        return std::nullopt;  // another dump's hang, or stacks taken on request
      }
    }
    std::optional<HangVerdict> v = parse_hang_verdict(text, &error);
    if (!v) {
      if (!error.empty()) *warning = path + ": " + error + "; the graphs name no hang";
      return std::nullopt;
    }
    v->source = path;
    return v;
  }
  return std::nullopt;
}

}  // namespace xpu_timer::flamegraph
