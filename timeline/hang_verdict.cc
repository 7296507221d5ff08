#include "timeline/hang_verdict.h"

#include <utility>

#include "common/hang_document.h"

namespace xpu_timer::timeline {

const VerdictRank* HangVerdict::find(int rank) const {
  for (const VerdictRank& r : ranks) {
    if (r.rank == rank) return &r;
  }
  return nullptr;
}

bool parse_hang_verdict(const std::string& text, HangVerdict* out, std::string* error,
                        std::string* warning) {
  *out = HangVerdict{};
  hang_document::Document doc;
  std::vector<std::string> warnings;
  if (!hang_document::parse(text, &doc, error, &warnings)) return false;
  if (!warnings.empty()) *warning = warnings.front();
  out->hung = doc.hung;
  out->detected_at_unix_s = doc.detected_at;
  out->timeout_s = doc.timeout_s;
  out->summary = std::move(doc.summary);
  for (hang_document::Rank& r : doc.ranks) {
    VerdictRank v;
    v.rank = r.rank;
    v.state = std::move(r.state);
    v.reason = std::move(r.reason);
    v.comm = r.comm;
    v.seq = r.seq;
    v.last_completed_seq = r.last_completed_seq;
    if (r.operation) {
      v.op = std::move(r.operation->name);
      // A stuck rank names its communicator inside the operation.
      if (!v.comm) v.comm = r.operation->comm;
      if (!v.seq) v.seq = r.operation->seq;
    }
    out->ranks.push_back(std::move(v));
  }
  return true;
}

}  // namespace xpu_timer::timeline
