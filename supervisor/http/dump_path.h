// Which file of the dump folder a GET /dumps/... names, and opening it
// without ever leaving that folder. The request path comes from anyone who
// can reach the port (a browser page too), so nothing in it is trusted:
//  - the path is split on '/' before anything is decoded, then each part is
//    percent-decoded once; a part must then be a plain name (is_plain_name):
//    no '/', '\', '%', NUL or control byte, not "." or ".." nor anything
//    starting with '.', so "%2e%2e", "%2f" and a double encoding ("%252e"
//    decodes to "%2e") are refused like their plain forms (400);
//  - at most two parts: <file> at the folder's top level, or <folder>/<file>
//    (the dump folders hold no sub-folders);
//  - each part is opened with openat(O_NOFOLLOW) below the one before, so a
//    symbolic link is never followed, to a folder or a file; the file is
//    looked at (fstatat) before it is opened and opened non-blocking, so a
//    FIFO, socket or device is refused without a read that could block and
//    without the side effects of opening a device; fstat after the open
//    closes the race of a file swapped in between.
// Pure parsing apart from open_dump_file(); any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace xpu_timer::supervisor {

// A name the dump routes list and serve: 1-255 bytes of letters, digits and
// "._-+@,=~", the first not '.'. Every name the supervisor writes is one.
bool is_plain_name(std::string_view name);

struct DumpPath {
  std::string folder;  // "" for a file at the dump folder's top level
  std::string file;    // "" (and no folder) for the listing, GET /dumps
};

// `rest`: the request path after "/dumps", query removed and still
// percent-encoded: "", "/", "/hang.json", "/stacks-x/cpp_stack.svg".
// false with one line in `why` when it is malformed (HTTP 400) or names
// something deeper than <folder>/<file> (`*too_deep` set: HTTP 404).
bool parse_dump_path(std::string_view rest, DumpPath* out, std::string* why,
                     bool* too_deep = nullptr);

struct OpenedDumpFile {
  int status = 200;  // 200, or 404 (missing, a folder), 403 (a link, not a regular file), 500
  std::string why;   // one line when status != 200
  UniqueFd fd;       // open for reading, at offset 0
  uint64_t bytes = 0;
};

// Opens `path` (a file, as parse_dump_path gave it) below `dump_dir`.
OpenedDumpFile open_dump_file(const std::string& dump_dir, const DumpPath& path);

}  // namespace xpu_timer::supervisor
