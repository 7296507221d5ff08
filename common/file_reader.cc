#include "common/file_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/unique_fd.h"

namespace xpu_timer {

const char* file_kind_phrase(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

ReadFileStatus read_regular_file(const std::string& path, size_t max_bytes, std::string* out,
                                 std::string* error) {
  out->clear();
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    *error = std::string("cannot open: ") + strerror(err);
    return err == ENOENT || err == ENOTDIR ? ReadFileStatus::kMissing : ReadFileStatus::kFailed;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    *error = std::string("cannot stat: ") + strerror(errno);
    return ReadFileStatus::kFailed;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = std::string("not a regular file (") + file_kind_phrase(st.st_mode) + ")";
    return ReadFileStatus::kNotRegular;
  }
  if (static_cast<unsigned long long>(st.st_size) > max_bytes) {
    *error = "too large (" + std::to_string(st.st_size) + " bytes, at most " +
             std::to_string(max_bytes) + ")";
    return ReadFileStatus::kTooLarge;
  }
  // st_size is a hint (0 for /proc files, stale for a growing file): read to
  // the end, one byte past the limit to tell "exactly max_bytes" from more.
  out->resize(st.st_size > 0 ? static_cast<size_t>(st.st_size) : size_t{4096});
  size_t got = 0;
  for (;;) {
    if (got == out->size()) {
      if (got > max_bytes) break;
      out->resize(std::min(max_bytes + 1, std::max(got * 2, got + 4096)));
    }
    const ssize_t n = ::read(fd.get(), &(*out)[got], out->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = std::string("read failed: ") + strerror(errno);
      out->clear();
      return ReadFileStatus::kFailed;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > max_bytes) {
    *error = "too large (more than " + std::to_string(max_bytes) + " bytes)";
    out->clear();
    return ReadFileStatus::kTooLarge;
  }
  out->resize(got);
  return ReadFileStatus::kOk;
}

}  // namespace xpu_timer
