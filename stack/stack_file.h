// The stack file: one rank's stacks at one moment, `<dump>/RRRRR-WWWWW.stacktrace`
// (rank and world size, zero-padded). This header is the one owner of the
// format: the model (stack_types.h), the writer and the reader live here and
// the collector, the supervisor, the CLI and the flame-graph viewer all use
// them (docs/architecture.md, "Stack file"). The files are JSON; key order and
// white space carry no meaning.
//
//   {"version": 1,                  the format version (see below)
//    "rank": 3, "world_size": 8,    0 <= rank < world_size <= kMaxWorldSize
//    "pid": 1234, "host": "node1", "process_state": "S (sleeping)",
//    "collected_at": 1763800000.1,  unix seconds
//    "stopped_ms": 12.5,            how long the process was stopped by us
//    "python_version": "3.12.1" | null,
//    "errors": ["one line per problem: the stacks may be partial"],
//    "threads": [                   the main thread first, then by tid
//      {"tid": 1234, "name": "python3", "state": "S", "holds_gil": true | null,
//       "native": [{"pc": "0x7f..", "func": "ncclAllReduce" | "??",
//                   "module": "/path/libnccl.so.2", "offset": "0x1234",
//                   "file": "enqueue.cc" | null, "line": 12 | null,
//                   "inlined": false}],
//       "python": [{"func": "train_step", "file": "/x/train.py", "line": 42}],
//       "mixed":  [{"kind": "python", "func", "file", "line"} |
//                  {"kind": "native", "func", "module", "file", "line"}]}]}
//
// Frames are listed innermost first. Required: version, rank, world_size,
// threads, and in each frame func (and kind in mixed); every other key may be
// absent or null and then takes the default of stack_types.h.
//
// Version rule. "version" changes only when an existing reader would misread a
// new file: a key changes type or meaning, or a new key becomes required. Adding
// a key is not a new version: readers skip keys they do not know, at any depth,
// so a writer may add one whose absence old readers can live without. A reader
// refuses a file whose version is not the one it reads, whatever else the file
// holds, with "version: unsupported version N (this reader reads 1)"; it never
// guesses at a layout it does not know.
//
// Files are untrusted on the way in (copied between nodes, truncated by a full
// disk, or not ours at all): the reader never throws or crashes, bounds the
// size it reads and the numbers it accepts, and names the field and the problem
// in one line. All functions are safe on any thread; none keeps state.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stack/stack_types.h"

namespace xpu_timer::stack {

// The only version this code writes and reads.
constexpr int kStackFileVersion = 1;
// Larger world sizes are taken as corrupt numbers, not as jobs.
constexpr long long kMaxWorldSize = 1 << 20;
// Larger files are refused before they are read.
constexpr size_t kMaxStackFileBytes = size_t{1} << 30;
constexpr std::string_view kStackFileSuffix = ".stacktrace";

// "00003-00008.stacktrace"
std::string stack_file_name(int rank, int world_size);

// The document of a file.
nlohmann::json to_json(const ProcessStack& stack);
// Its text, as written (indent 1) or compact (indent -1). Names are bytes
// (thread names, symbols) and JSON is UTF-8: invalid UTF-8 becomes U+FFFD.
std::string stack_file_text(const ProcessStack& stack, int indent = 1);
// Writes atomically (temporary file + rename) so readers never see half a file.
bool write_stack_file(const ProcessStack& stack, const std::string& path, std::string* error);

// Decodes the text of a file; nullopt and *error, e.g.
// "threads[3].native[2].func: expected a string, got number", when it does not
// follow the format.
std::optional<ProcessStack> parse_stack_file(std::string_view text, std::string* error);
// Reads and decodes a regular file of at most max_bytes; *error starts with the path.
std::optional<ProcessStack> load_stack_file(const std::string& path, std::string* error,
                                            size_t max_bytes = kMaxStackFileBytes);
// The same into *out, reusing the memory of what it held (its strings keep
// their capacity), for a loader that decodes many files: false and *error
// when the file does not decode, *out then holding part of it.
bool parse_stack_file(std::string_view text, ProcessStack* out, std::string* error);
bool load_stack_file(const std::string& path, ProcessStack* out, std::string* error,
                     size_t max_bytes = kMaxStackFileBytes);

// The `*.stacktrace` entries directly in `dir` that are not folders, sorted by
// name: a FIFO, device or socket so named is listed so that the loader refuses
// it with one warning (load_stack_file never blocks on it); false with *error
// naming the folder and errno when it cannot be listed.
bool list_stack_files(const std::string& dir, std::vector<std::string>* paths, std::string* error);

}  // namespace xpu_timer::stack
