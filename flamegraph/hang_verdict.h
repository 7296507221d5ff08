// The supervisor's hang verdict as the flame graphs show it: which ranks were
// stuck and which are the culprits (missing, stuck in another operation than
// the others, unresponsive, exited, or the odd ones of a collective mismatch),
// read from the hang.json the supervisor writes into its dump folder. A thin adapter over the hang document's one reader
// (common/hang_document.h). The graphs name the verdict in their header and
// mark the frames a missing rank passes through, so that
// `stuck_in_host_code@...@2|0-1/3` (2 being the rank whose stack passes
// there) is not read as "rank 2 stuck". Pure apart from reading files (through
// common/file_reader.h); any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xpu_timer::flamegraph {

// Every list is ascending; a rank is in at most one of them.
struct HangVerdict {
  std::string summary;       // "ranks 0,1,3 stuck in AllReduce #6 ...; rank 2 missing ..."
  std::vector<int> stuck;    // in the operation most stuck ranks wait in
  std::vector<int> missing;  // the ranks the stuck ones wait for
  // Stuck, but in another operation than the largest group of stuck ranks
  // (groups[] of the document): the ranks that went their own way.
  std::vector<int> stuck_elsewhere;
  std::vector<int> unresponsive;  // alive, but their heartbeat stopped
  std::vector<int> exited;
  // The odd ranks of the collective mismatches the document lists.
  std::vector<int> mismatched;
  bool stalled = false;  // the whole job stood still: no culprit named, the graphs look for one
  std::string source;    // the hang.json it came from
};

// The verdict of a hang.json text; nullopt with *error when it is not one,
// and nullopt with an empty *error when it describes no hang (nothing stuck,
// no stall, no mismatch).
std::optional<HangVerdict> parse_hang_verdict(std::string_view text, std::string* error);

// The verdict for the stacks in `dir`: DIR/hang.json, else DIR/../hang.json
// when its `stacks.dir` names a folder called like DIR (the supervisor keeps
// hang.json in --dump-dir and the stacks in --dump-dir/stacks-<time>/; a
// later hang rewrites hang.json, whose stacks are then another folder's).
// nullopt when there is none; *warning says why a hang.json was not used.
std::optional<HangVerdict> find_hang_verdict(const std::string& dir, std::string* warning);

}  // namespace xpu_timer::flamegraph
