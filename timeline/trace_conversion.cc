#include "timeline/trace_conversion.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

namespace xpu_timer::timeline {
namespace {

// An output written to a temporary name and renamed when complete.
class OutputFile {
 public:
  explicit OutputFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {}
  ~OutputFile() {
    if (file_ != nullptr) {
      std::fclose(file_);
      ::unlink(tmp_.c_str());
    }
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // nullptr with *error set.
  std::FILE* open(std::string* error) {
    const int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      *error = "cannot create " + tmp_ + ": " + std::strerror(errno);
      return nullptr;
    }
    file_ = ::fdopen(fd, "w");
    if (file_ == nullptr) {
      *error = "cannot write " + tmp_ + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp_.c_str());
    }
    return file_;
  }
  // `write_errno`: the first failed write's errno, 0 if none. False with *error.
  bool commit(int write_errno, std::string* error) {
    const int close_rc = std::fclose(file_);
    file_ = nullptr;
    const int err = write_errno != 0 ? write_errno : (close_rc != 0 ? errno : 0);
    if (err != 0 || ::rename(tmp_.c_str(), path_.c_str()) != 0) {
      *error = "cannot write " + path_ + ": " + std::strerror(err != 0 ? err : errno);
      ::unlink(tmp_.c_str());
      return false;
    }
    return true;
  }

 private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
};

}  // namespace

bool write_file_whole(const std::string& path, const std::string& text, std::string* error) {
  OutputFile out(path);
  std::FILE* f = out.open(error);
  if (f == nullptr) return false;
  const int err = std::fwrite(text.data(), 1, text.size(), f) == text.size() ? 0 : errno;
  return out.commit(err != 0 ? err : (std::ferror(f) ? EIO : 0), error);
}

bool write_trace_file(const LoadedDumps& dumps, const TraceOptions& options,
                      const std::string& path, TraceSummary* summary,
                      std::vector<std::string>* warnings, std::string* error) {
  OutputFile out(path);
  std::FILE* file = out.open(error);
  if (file == nullptr) return false;
  TraceSink sink(file);
  *summary = write_trace(dumps, options, &sink, warnings);
  return out.commit(sink.write_errno(), error);
}

LoadedDumps dumps_from_images(const std::string& dir, const std::vector<RankImage>& ranks,
                              const std::string& hang_json, const std::string& comms_json) {
  LoadedDumps out;
  out.folders.push_back(DumpFolder{dir, std::nullopt, {}});
  if (!hang_json.empty()) {
    load_hang_text(dir + "/hang.json", hang_json, &out.folders[0], &out.warnings);
  }
  if (!comms_json.empty()) {
    load_comm_names_text(dir + "/comms.json", comms_json, &out.folders[0], &out.warnings);
  }
  std::map<int, RankTimeline> by_rank;
  for (const RankImage& r : ranks) {
    ++out.files_found;
    const std::string name = recorder::dump_file_name(r.rank, r.world_size);
    RankTimeline rt;
    std::string warning;
    const bool ok =
        load_ring_image(dir + "/" + name, name, r.image.data(), r.image.bytes, &rt, &warning);
    if (!warning.empty()) out.warnings.push_back(warning);
    if (!ok) continue;
    rt.folder = 0;
    by_rank.emplace(rt.rank, std::move(rt));
  }
  if (ranks.empty()) out.warnings.push_back("no .timeline files in " + dir);
  for (auto& [rank, rt] : by_rank) out.ranks.push_back(std::move(rt));
  return out;
}

}  // namespace xpu_timer::timeline
