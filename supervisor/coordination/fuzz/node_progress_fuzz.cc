// libFuzzer entry for the node documents and stamps the nodes of a job read
// from the coordination store (supervisor/coordination/node_progress.h): the
// input is the value of a <root>/nodes/<node> or stamps/<node> key, written
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

namespace sup = xpu_timer::supervisor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
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
