// The one way xpu-timer reads a whole file it did not write itself (dump
// folders, stack files, hang.json, /proc): bounded, and only a regular file.
// The path is opened O_NONBLOCK, so a FIFO or a device planted where a file
// was expected is refused at once instead of blocking the reader for ever;
// the descriptor is O_CLOEXEC (the supervisor forks). /proc files, whose size
// is 0 until read, are read to their end like any other. Any thread.
#pragma once

#include <cstddef>
#include <string>

namespace xpu_timer {

enum class ReadFileStatus {
  kOk,
  kMissing,     // ENOENT (or ENOTDIR): nothing there
  kNotRegular,  // a FIFO, socket, device or folder: refused
  kTooLarge,    // more than max_bytes
  kFailed,      // any other error (permission, I/O)
};

// Reads all of `path` into *out (at most max_bytes) and returns kOk, or
// another status with a one-line reason in *error ("not a regular file (a
// FIFO)", "too large (... bytes, at most ...)", "cannot open: ...").
ReadFileStatus read_regular_file(const std::string& path, size_t max_bytes, std::string* out,
                                 std::string* error);

// The same, true only for kOk.
inline bool read_regular_file_ok(const std::string& path, size_t max_bytes, std::string* out,
                                 std::string* error) {
  return read_regular_file(path, max_bytes, out, error) == ReadFileStatus::kOk;
}

// "a FIFO", "a socket", "a character device", "a block device", "a folder",
// "a symbolic link", "a regular file" for an st_mode.
const char* file_kind_phrase(unsigned mode);

}  // namespace xpu_timer
