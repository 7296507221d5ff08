// The hang document: what GET /hang answers and what <dump-dir>/hang.json and
// every dump folder's hang.json hold (docs/architecture.md "Contracts", "Hang
// document"). This file is its one owner: the format's version, a plain model
// of it, the one writer (model -> text) and the one reader (text -> model).
// The supervisor fills the model (supervisor/analysis/hang_report_json.h);
// the flame graphs, the timeline and the tests read it back through here.
// scripts/describe_hang.py reads the same keys on its own, as a small script
// of the documented shape.
//
// hang.json travels between nodes and may be truncated, edited or not ours at
// all, so the reader is fuzzed (common/fuzz/hang_document_fuzz.cc) and is
// tolerant where that is safe:
//   - keys it does not know are ignored (adding an optional key is no new
//     version);
//   - a key of the wrong type is dropped, with one warning line naming it
//     ("ranks[2].pid: not an integer; ignored"); null reads as absent;
//   - a rank entry without a valid "rank" is dropped whole (one line);
//   - another "version" is refused in one line naming both versions;
//     a document without "version" (written before the key existed) is read
//     by the same rules, as the same shape;
//   - text that is not a JSON object, or an object without a "ranks" array,
//     is not a hang document: refused in one line.
// Pure functions, any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/code_frame.h"

namespace xpu_timer::hang_document {

// Bumped only when an existing reader would misread a new document (a key
// changes type or meaning, or a new key becomes required).
constexpr int kVersion = 1;
// The version a document without the key is read as.
constexpr int kUnversioned = 0;

// A hang document larger than this is refused by its readers (10,000 ranks
// take a few MB).
constexpr size_t kMaxBytes = 64 << 20;

// The operation a rank has in flight: the oldest, the one the hang clock
// follows ("operation" of a rank).
struct Operation {
  std::string kind;              // "nccl", "gemm", ... (proto::op_kind_str)
  std::string name;              // "AllReduce" (proto::op_name_str)
  std::optional<uint64_t> comm;  // NCCL only: the communicator's hash
  std::optional<uint64_t> seq;   // NCCL only: its sequence number on comm
  std::string dtype;             // "bf16"
  uint64_t bytes = 0;
  uint64_t flops = 0;
  uint32_t group_size = 1;
};

// One expected rank and its verdict ("ranks[]").
struct Rank {
  int rank = -1;
  // "ok", "stuck", "missing", "unresponsive", "exited", "stalled", "silent"
  // (its node not heard from for silent_s: not judged); in a
  // crash dump's document (hung false), "crashed" for the rank that crashed
  std::string state;
  bool registered = false;
  std::optional<int> node;  // torchrun's group rank, when known
  // Written only for a registered rank.
  int pid = 0;
  int local_rank = -1;
  std::string host;
  double heartbeat_age_s = 0;
  double silent_s = 0;  // written for a silent rank
  // With an operation in flight: pending_s and running_s are written with it.
  std::optional<Operation> operation;
  double pending_s = 0;             // since launch
  std::optional<double> running_s;  // since it could start; none: not started
  // Written only for a stuck rank: stuck with nothing started on the GPU.
  bool not_started = false;
  // Written only for a missing rank: "behind", "not_started",
  // "no_operation_in_flight", "never_registered"; and for a crashed one:
  // what ended it ("SIGSEGV at address 0x0 in memmove, from f (train.py:40)").
  std::string reason;
  // The stuck communicator it is in. Written when comm is set, and (null
  // where unset) for every missing rank.
  std::optional<uint64_t> comm;
  std::string comm_name;        // "" = unknown (written as null)
  std::optional<uint64_t> seq;  // the collective the stuck ranks are in
  std::optional<uint64_t> issued_seq;
  std::optional<uint64_t> last_completed_seq;
  // Where the rank was when its stacks were taken for this verdict: its
  // innermost frame that is the user's, then that frame's caller
  // (common/code_frame.h; each {"function", "file", "line", "kind":
  // "python"|"native"}). Written for every rank, [] while unknown (no stacks
  // yet, a rank that is no culprit, a node that could not take them).
  std::vector<CodeFrame> where;
  // The Python line that issued the collective it is in, from its flight
  // recorder (one frame, the same shape as `where`); [] when unknown (not in
  // a collective, no Python line, a rank of another node).
  std::vector<CodeFrame> issued_at;
  // A stuck rank: the members of its collective it waits for ("waits_for":
  // [{"rank", "comm", "comm_name", "seq"}], [] for every other rank).
  struct WaitFor {
    int rank = 0;
    std::optional<uint64_t> comm;
    std::string comm_name;  // "" = unknown (written as null)
    uint64_t seq = 0;
  };
  std::vector<WaitFor> waits_for;
};

// What every stuck rank ultimately waits on ("roots[]"): a rank (missing,
// exited, unresponsive, or stuck in an operation nobody else holds up), a
// collective with every member in it, or a cycle of ranks (a deadlock by
// order); and who waits on it, level by level ("waiters": [[direct], [next],
// ...]).
struct Root {
  std::string kind;  // "rank", "collective", "cycle"
  std::vector<int> ranks;
  std::vector<std::vector<int>> waiters;
};

// Stuck ranks waiting in the same operation ("groups[]").
struct Group {
  std::string operation;  // its name, "AllReduce"
  std::string kind;       // "nccl", ...
  // NCCL only: written together when comm is set.
  std::optional<uint64_t> comm;
  std::string comm_name;  // "" = unknown (written as null)
  uint64_t seq = 0;
  std::vector<int> ranks;    // also written folded as "ranks_folded" ("0-3/6")
  std::vector<int> missing;  // the ranks this communicator waits for
  double pending_s = 0;      // the longest time since launch among ranks
  double waiting_s = 0;      // the longest hang clock among ranks
  bool not_started = false;
};

struct Document {
  // As read: kVersion, or kUnversioned for a document without the key. The
  // writer always writes kVersion.
  int version = kVersion;
  bool hung = false;
  std::optional<double> detected_at;  // unix seconds; none: no hang seen
  // Unix seconds since which no rank is stuck any more although the hang was
  // not cleared (its stuck ranks died or were stopped): the durations and
  // states are as of then. None: the verdict is live.
  std::optional<double> frozen_since;
  double timeout_s = 0;
  // A stall (no hang; every rank alive with nothing in flight and nothing
  // issued or completed for the stall time): unix seconds since which
  // nothing was. None: no stall. A document without the keys reads as none.
  bool stalled = false;
  std::optional<double> stalled_since;
  std::string summary;  // the verdict in one sentence
  std::vector<Rank> ranks;
  std::vector<Group> groups;
  std::vector<Root> roots;  // the culprits first: the roots of the waits
  // What the supervisor adds beside the verdict, opaque here (their shapes
  // are the supervisor's: docs/architecture.md "Hang document").
  nlohmann::json mismatches = nlohmann::json::array();  // collective mismatches
  uint64_t mismatch_total = 0;
  uint64_t collectives_checked = 0;
  nlohmann::json coordinator;  // the multi-node link; null: none
  nlohmann::json stacks;       // a stack dump ({"dir": ..., ...}); null: none
  nlohmann::json timeline;     // a flight-recorder dump ({"dir": ...}); null: none

  const Rank* find(int rank) const;
  // stacks.dir, "" when the document names no stack folder.
  std::string stacks_dir() const;
};

// The document as JSON, every key written.
nlohmann::json to_json(const Document& doc);
// A place as the document writes it (a rank's `where`; also a mismatch's odd
// ranks in mismatch.json): [{"function","file","line"|null,"kind"}].
nlohmann::json where_json(const std::vector<CodeFrame>& where);
// The same as text: indented by 2, ending in a newline; bytes that are not
// UTF-8 (host names and paths come from the ranks) become U+FFFD.
std::string to_text(const Document& doc);

// Reads a hang document. False with a one-line *error when it is not one (not
// JSON, not an object, no "ranks" array, nested deeper than any document,
// another version). True otherwise, with one line in *warnings per key
// dropped (at most a few lines, then one saying how many more).
bool parse(std::string_view text, Document* out, std::string* error,
           std::vector<std::string>* warnings);

}  // namespace xpu_timer::hang_document
