// The supervisor's hang verdict as the timeline needs it, read back from the
// dump folder's hang.json: a thin adapter over the hang document's one reader
// (common/hang_document.h; docs/architecture.md "Hang document"). The
// document is additive: unknown keys are ignored, and a key of the wrong type
// drops that key (or that rank), never the whole verdict.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xpu_timer::timeline {

struct VerdictRank {
  int rank = -1;
  std::string state;             // "stuck", "missing", "unresponsive", "exited", "ok"
  std::string reason;            // missing: "behind", "no_operation_in_flight", "never_registered"
  std::string op;                // stuck: the pending operation's name ("AllReduce")
  std::optional<uint64_t> comm;  // the communicator it waits on, or is behind on
  std::optional<uint64_t> seq;   // the sequence number waited for
  std::optional<uint64_t> last_completed_seq;
};

struct HangVerdict {
  bool hung = false;
  std::optional<double> detected_at_unix_s;
  double timeout_s = 0;
  std::string summary;
  std::vector<VerdictRank> ranks;

  const VerdictRank* find(int rank) const;
};

// Parses hang.json's text. False with a one-line reason when it is no hang
// document (common/hang_document.h says which are not); keys of the wrong
// type are skipped (the first one's line is put in *warning, the verdict
// still returned).
bool parse_hang_verdict(const std::string& text, HangVerdict* out, std::string* error,
                        std::string* warning);

}  // namespace xpu_timer::timeline
