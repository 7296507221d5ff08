// libFuzzer entry for the slow-rank summaries the nodes of a job read from
// the coordination store (supervisor/analysis/slow_summary.h): the input is
// the value of a <root>/slow/<node> key, written by anyone with access to
// the store. Every outcome must be a refusal with a one-line reason, or a
// summary whose text reads back to the same text, which the job-wide merge
// takes without a crash; never a sanitizer report (ASan/UBSan in this build).
// Seeds: supervisor/analysis/fuzz/corpus/slow_summary_fuzz/.
// Run: slow_summary_fuzz -max_total_time=60 [corpus dir]
#include <cstddef>
#include <cstdint>
#include <string>

#include "supervisor/analysis/slow_summary.h"

namespace sup = xpu_timer::supervisor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  sup::NodeSlowSummary s;
  std::string error;
  if (!sup::parse_slow_summary(text, 64, &s, &error)) {
    if (error.empty() || error.find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  const std::string written = sup::slow_summary_text(s);
  sup::NodeSlowSummary again;
  if (!sup::parse_slow_summary(written, 64, &again, &error)) __builtin_trap();
  if (sup::slow_summary_text(again) != written) __builtin_trap();
  const sup::SlowReport merged = sup::merge_slow_reports(sup::SlowReport{}, {s, again});
  if (merged.stragglers.size() > 2 * s.stragglers.size()) __builtin_trap();
  return 0;
}
