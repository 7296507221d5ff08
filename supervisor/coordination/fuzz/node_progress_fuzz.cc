// libFuzzer entry for the node documents, stamps and leader's digests the
// nodes of a job read from the coordination store
// (supervisor/coordination/node_progress.h, progress_digest.h): the input is
// the value of a <root>/nodes/<node>, stamps/<node> or leader/ key, written
// by anyone with access to the store. Every outcome must be a refusal with a
// one-line reason, or a document whose text reads back to the same document
// (its culprits' places bounded) and which the job-wide merge takes without a
// crash; never a sanitizer report (ASan/UBSan in this build).
// Seeds: supervisor/coordination/fuzz/corpus/node_progress_fuzz/.
// Run: node_progress_fuzz -max_total_time=60 [corpus dir]
#include <cstddef>
#include <cstdint>
#include <string>

#include "supervisor/coordination/node_progress.h"
#include "supervisor/coordination/progress_digest.h"

namespace sup = xpu_timer::supervisor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
  // The digests: refused in one line, or read back the same from their text.
  sup::ProgressDigest digest;
  if (!sup::parse_progress_digest(text, &digest, &error)) {
    if (error.empty() || error.find('\n') != std::string::npos) __builtin_trap();
  } else {
    sup::ProgressDigest again;
    if (!sup::parse_progress_digest(sup::progress_digest_text(digest), &again, &error) ||
        sup::progress_digest_text(again) != sup::progress_digest_text(digest)) {
      __builtin_trap();
    }
  }
  error.clear();
  sup::SlowDigest slow;
  if (!sup::parse_slow_digest(text, 128, &slow, &error)) {
    if (error.empty() || error.find('\n') != std::string::npos) __builtin_trap();
  } else if (slow.summaries.size() > 128 ||
             !sup::parse_slow_digest(sup::slow_digest_text(slow), 128, &slow, &error)) {
    __builtin_trap();
  }
  error.clear();
  sup::NodeStamp stamp;
  if (!sup::parse_node_stamp(text, &stamp, &error) &&
      (error.empty() || error.find('\n') != std::string::npos)) {
    __builtin_trap();
  }
  sup::NodeProgress p;
  error.clear();
  if (!sup::parse_node_progress(text, &p, &error)) {
    if (error.empty() || error.find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  for (const sup::RankSample& s : p.snapshot.ranks) {
    if (s.where.size() > xpu_timer::kMaxWhereFrames) __builtin_trap();
    for (const xpu_timer::CodeFrame& f : s.where) {
      if (f.function.size() > xpu_timer::kMaxCodeFrameText) __builtin_trap();
    }
  }
  const std::string written = sup::node_progress_text(p);
  sup::NodeProgress again;
  if (!sup::parse_node_progress(written, &again, &error)) __builtin_trap();
  if (sup::node_progress_text(again) != written) __builtin_trap();
  sup::apply_node_stamp(stamp, &again);
  const sup::Snapshot merged = sup::merge_job_snapshot(sup::Snapshot{}, -1, {p, again}, 4);
  if (merged.ranks.size() > 2 * p.snapshot.ranks.size() + 4) __builtin_trap();
  return 0;
}
