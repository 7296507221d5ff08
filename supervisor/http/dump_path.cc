#include "supervisor/http/dump_path.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <vector>

namespace xpu_timer::supervisor {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One percent-decoding; false on a '%' without two hex digits.
bool percent_decode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    const int hi = i + 1 < in.size() ? hex_digit(in[i + 1]) : -1;
    const int lo = i + 2 < in.size() ? hex_digit(in[i + 2]) : -1;
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// The part as shown in an error line: printable, bounded.
std::string shown_part(std::string_view part) {
  std::string s(part.substr(0, 80));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return part.size() > 80 ? s + "..." : s;
}

std::string errno_text(int e) { return strerror(e); }

// Opens `name` below `dir_fd` as a folder (`folder`) or a regular file,
// never following a link, never blocking; `where` names it in errors.
OpenedDumpFile open_below(int dir_fd, const std::string& name, bool folder,
                          const std::string& where) {
  OpenedDumpFile r;
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    r.status = errno == ENOENT || errno == ENOTDIR ? 404 : 500;
    r.why = (r.status == 404 ? "not found: " : "cannot look at ") + where +
            (r.status == 404 ? "" : ": " + errno_text(errno));
    return r;
  }
  const auto refuse = [&](int status, const std::string& what) {
    r.status = status;
    r.why = what;
    r.fd.reset();
    return std::move(r);
  };
  if (S_ISLNK(st.st_mode)) {
    return refuse(403, "refused: " + where + " is a symbolic link; only the dump folder's own " +
                           "files are served");
  }
  if (folder && !S_ISDIR(st.st_mode))
    return refuse(404, "not found: " + where + " is not a folder");
  if (!folder && S_ISDIR(st.st_mode)) {
    return refuse(404, where + " is a folder: GET /dumps lists its files");
  }
  if (!folder && !S_ISREG(st.st_mode)) {
    return refuse(403, "refused: " + where + " is not a regular file");
  }
  const int flags =
      O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | (folder ? O_DIRECTORY : 0);
  r.fd.reset(::openat(dir_fd, name.c_str(), flags));
  if (!r.fd.valid()) {
    const int e = errno;
    if (e == ELOOP) return refuse(403, "refused: " + where + " is a symbolic link");
    return refuse(e == ENOENT ? 404 : 500, (e == ENOENT ? "not found: " : "cannot open ") + where +
                                               (e == ENOENT ? "" : ": " + errno_text(e)));
  }
  // Swapped for something else since fstatat: look again at what is open.
  if (::fstat(r.fd.get(), &st) != 0) return refuse(500, "cannot look at " + where);
  if (folder ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return refuse(403, "refused: " + where + " is not a regular " +
                           (folder ? std::string("folder") : std::string("file")));
  }
  r.bytes = static_cast<uint64_t>(st.st_size);
  return r;
}

}  // namespace

bool is_plain_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '.') return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '+' || c == '@' || c == ',' ||
                    c == '=' || c == '~';
    if (!ok) return false;
  }
  return true;
}

bool parse_dump_path(std::string_view rest, DumpPath* out, std::string* why, bool* too_deep) {
  *out = DumpPath{};
  if (too_deep != nullptr) *too_deep = false;
  if (rest.empty() || rest == "/") return true;
  if (rest.front() != '/') {
    *why = "bad dump path '" + shown_part(rest) + "'";
    return false;
  }
  rest.remove_prefix(1);
  std::vector<std::string> parts;
  while (true) {
    const size_t slash = rest.find('/');
    const std::string_view raw = rest.substr(0, slash);
    std::string part;
    if (!percent_decode(raw, &part)) {
      *why = "bad percent-encoding in '" + shown_part(raw) + "'";
      return false;
    }
    if (!is_plain_name(part)) {
      *why = "refused: '" + shown_part(part) +
             "' is not a dump file or folder name (letters, digits and ._-+@,=~, not starting "
             "with '.')";
      return false;
    }
    parts.push_back(std::move(part));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (parts.size() > 2) {
    if (too_deep != nullptr) *too_deep = true;
    *why = "not found: the dump folders hold no sub-folders (GET /dumps lists what there is)";
    return false;
  }
  out->file = parts.back();
  if (parts.size() == 2) out->folder = parts.front();
  return true;
}

OpenedDumpFile open_dump_file(const std::string& dump_dir, const DumpPath& path) {
  OpenedDumpFile r;
  // The dump folder itself is the user's --dump-dir, a link to it included.
  const UniqueFd top(::open(dump_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top.valid()) {
    r.status = 500;
    r.why = "cannot open the dump folder " + dump_dir + ": " + errno_text(errno);
    return r;
  }
  if (path.folder.empty()) return open_below(top.get(), path.file, false, path.file);
  OpenedDumpFile folder = open_below(top.get(), path.folder, true, path.folder);
  if (folder.status != 200) return folder;
  return open_below(folder.fd.get(), path.file, false, path.folder + "/" + path.file);
}

}  // namespace xpu_timer::supervisor
