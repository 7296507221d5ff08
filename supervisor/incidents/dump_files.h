// Files of the dump directory: creation of the directory and atomic
// replacement of small files (hang.json, supervisor.port), so a reader never
// sees half a file. Any thread.
#pragma once

#include <string>

namespace xpu_timer::supervisor {

// mkdir -p; false with a one-line `error`.
bool make_directories(const std::string& path, std::string* error);

// The supervisor's --dump-dir at start: created, the log copied into its
// supervisor.log, its hang.json and supervisor.port of an earlier run
// removed. Returns the folder, or "" with one line in `error` when it cannot
// be created, is not a folder or takes no file: the supervisor then refuses
// to start the job (a hang would leave nothing to read).
std::string open_dump_dir(const std::string& dir, std::string* error);

// Writes `content` to path.tmp.<pid> and renames it over `path`.
bool write_file_atomically(const std::string& path, const std::string& content, std::string* error);

// The same, for files that are a convenience (supervisor.port, mismatch.json):
// a failure is one warning in the log and the supervisor goes on.
void write_file_or_warn(const std::string& path, const std::string& content);

}  // namespace xpu_timer::supervisor
