#include "timeline/dump_loader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>

#include "common/file_reader.h"
#include "common/parse_number.h"

namespace xpu_timer::timeline {
namespace {

// Bounds on what a header may claim about its rank, so that a hostile value
// can never become a huge loop or allocation further on (ranks index tracks).
constexpr int kMaxRank = 1 << 24;
constexpr size_t kMaxHangJsonBytes = 64u << 20;
constexpr size_t kMaxCommsJsonBytes = 4u << 20;

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The sorted *.timeline names of a folder.
bool list_dumps(const std::string& dir, std::vector<std::string>* names, std::string* error) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    *error = "cannot open dump folder " + dir + ": " + std::strerror(errno);
    return false;
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (ends_with(name, ".timeline") && name[0] != '.') names->push_back(name);
  }
  ::closedir(d);
  std::sort(names->begin(), names->end());
  return true;
}

// Reads one dump file into `rt`. False with the one warning line.
bool load_one(const std::string& path, const std::string& name, RankTimeline* rt,
              std::string* warning) {
  std::string bytes, why;
  if (!read_regular_file_ok(path, max_dump_file_bytes(), &bytes, &why)) {
    *warning = path + ": " + why + "; skipped";
    return false;
  }
  return load_ring_image(path, name, bytes.data(), bytes.size(), rt, warning);
}

// Reads the optional file `name` of folder `dir` (at most `max_bytes`) and
// hands its text to `load`; a file that is there but unreadable is one
// warning ending in `without` ("no hang verdict shown").
template <typename Load>
void load_optional_file(const std::string& dir, const char* name, size_t max_bytes,
                        const char* without, std::vector<std::string>* warn, Load load) {
  const std::string path = dir + "/" + name;
  std::string text, why;
  const ReadFileStatus status = read_regular_file(path, max_bytes, &text, &why);
  if (status == ReadFileStatus::kMissing) return;
  if (status != ReadFileStatus::kOk) {
    warn->push_back(path + ": " + why + "; " + without);
    return;
  }
  load(path, text);
}

void load_folder_files(const std::string& dir, DumpFolder* folder, std::vector<std::string>* warn) {
  load_optional_file(dir, "hang.json", kMaxHangJsonBytes, "no hang verdict shown", warn,
                     [&](const std::string& path, const std::string& text) {
                       load_hang_text(path, text, folder, warn);
                     });
  load_optional_file(dir, "comms.json", kMaxCommsJsonBytes, "communicators unnamed", warn,
                     [&](const std::string& path, const std::string& text) {
                       load_comm_names_text(path, text, folder, warn);
                     });
}

// "3-8.timeline", the name a dump gives a rank's ring: (rank, world size);
// nullopt for any other name.
std::optional<std::pair<int64_t, int64_t>> rank_in_file_name(std::string_view name) {
  const std::optional<int64_t> rank = take_int(&name);
  if (!rank || name.empty() || name.front() != '-') return std::nullopt;
  name.remove_prefix(1);
  const std::optional<int64_t> world = take_int(&name);
  if (!world || name != ".timeline") return std::nullopt;
  return std::make_pair(*rank, *world);
}

}  // namespace

void load_comm_names_text(const std::string& source, const std::string& text, DumpFolder* folder,
                          std::vector<std::string>* warnings) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("comms") || !doc["comms"].is_array()) {
    warnings->push_back(source + ": not a communicator list; communicators unnamed");
    return;
  }
  for (const nlohmann::json& c : doc["comms"]) {
    if (!c.is_object() || !c.contains("comm") || !c["comm"].is_string() || !c.contains("name") ||
        !c["name"].is_string()) {
      continue;
    }
    const std::string hex = c["comm"].get<std::string>();
    const std::string name = c["name"].get<std::string>();
    if (hex.size() != 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos ||
        name.empty() || name.size() > 64) {
      continue;
    }
    folder->comm_names[*parse_uint(hex, 16)] = name;
  }
}

std::string comm_names_text(const std::map<uint64_t, std::string>& names) {
  nlohmann::json comms = nlohmann::json::array();
  for (const auto& [hash, name] : names) {
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
    comms.push_back({{"comm", hex}, {"name", name}});
  }
  return nlohmann::json{{"comms", std::move(comms)}}.dump(
             2, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

bool load_ring_image(const std::string& path, const std::string& name, const void* bytes,
                     size_t size, RankTimeline* rt, std::string* warning) {
  std::string why;
  if (!recorder::RingReader::read_image(bytes, size, &rt->ring, &why)) {
    *warning = path + ": " + why + "; skipped";
    return false;
  }
  const recorder::RingSnapshot& s = rt->ring;
  if (s.rank < 0 || s.rank >= kMaxRank || s.world_size < 0 || s.world_size > kMaxRank) {
    *warning = path + ": rank " + std::to_string(s.rank) + " of world size " +
               std::to_string(s.world_size) + " is out of range; skipped";
    return false;
  }
  if (s.records.empty() && s.skipped > 0) {
    *warning =
        path + ": none of its " + std::to_string(s.skipped) + " record(s) is readable; skipped";
    return false;
  }
  rt->rank = s.rank;
  rt->world_size = s.world_size;
  rt->path = path;
  if (const std::optional<std::pair<int64_t, int64_t>> named = rank_in_file_name(name);
      named && (named->first != s.rank || named->second != s.world_size)) {
    // The header was validated, the name may have been edited: trust the
    // header, but say so.
    *warning = path + ": its header says rank " + std::to_string(s.rank) + " of " +
               std::to_string(s.world_size) + "; using that";
  } else if (s.skipped > 0) {
    *warning = path + ": " + std::to_string(s.skipped) + " record(s) unreadable, kept the other " +
               std::to_string(s.records.size());
  }
  return true;
}

void load_hang_text(const std::string& source, const std::string& text, DumpFolder* folder,
                    std::vector<std::string>* warnings) {
  HangVerdict v;
  std::string why, note;
  if (!parse_hang_verdict(text, &v, &why, &note)) {
    warnings->push_back(source + ": " + why + "; no hang verdict shown");
    return;
  }
  if (!note.empty()) warnings->push_back(source + ": " + note);
  folder->verdict = std::move(v);
}

size_t max_dump_file_bytes() { return recorder::ring_file_bytes(recorder::kMaxCapacity); }

bool parse_dump_source(const std::string& arg, DumpSource* out, std::string* error) {
  *out = DumpSource{};
  if (arg.empty()) {
    *error = "empty dump folder name";
    return false;
  }
  const size_t colon = arg.rfind(':');
  if (colon != std::string::npos && !is_directory(arg)) {
    const std::string rank = arg.substr(colon + 1);
    if (rank.empty() || rank.size() > 8 ||
        rank.find_first_not_of("0123456789") != std::string::npos) {
      *error = "'" + arg + "': expected DIR or DIR:RANK with RANK a number";
      return false;
    }
    out->dir = arg.substr(0, colon);
    out->rank = static_cast<int>(*parse_int(rank));
  } else {
    out->dir = arg;
  }
  if (!is_directory(out->dir)) {
    *error = "'" + out->dir + "' is not a folder";
    return false;
  }
  return true;
}

void load_dumps(const std::vector<DumpSource>& sources, LoadedDumps* out) {
  *out = LoadedDumps{};
  std::map<int, RankTimeline> by_rank;
  for (const DumpSource& src : sources) {
    const size_t folder = out->folders.size();
    out->folders.push_back(DumpFolder{src.dir, std::nullopt, {}});
    std::vector<std::string> names;
    std::string error;
    if (!list_dumps(src.dir, &names, &error)) {
      out->warnings.push_back(error);
      continue;
    }
    load_folder_files(src.dir, &out->folders[folder], &out->warnings);
    size_t kept = 0;
    for (const std::string& name : names) {
      ++out->files_found;
      RankTimeline rt;
      std::string warning;
      const bool ok = load_one(src.dir + "/" + name, name, &rt, &warning);
      if (!warning.empty()) out->warnings.push_back(warning);
      if (!ok || (src.rank >= 0 && rt.rank != src.rank)) continue;
      rt.folder = folder;
      const auto [it, inserted] = by_rank.emplace(rt.rank, std::move(rt));
      if (!inserted) {
        out->warnings.push_back(src.dir + "/" + name + ": rank " + std::to_string(it->first) +
                                " was already loaded from " + it->second.path + "; skipped");
        continue;
      }
      ++kept;
    }
    if (names.empty()) {
      out->warnings.push_back("no .timeline files in " + src.dir);
    } else if (src.rank >= 0 && kept == 0) {
      out->warnings.push_back("no readable dump of rank " + std::to_string(src.rank) + " in " +
                              src.dir);
    }
  }
  for (auto& [rank, rt] : by_rank) out->ranks.push_back(std::move(rt));
}

}  // namespace xpu_timer::timeline
