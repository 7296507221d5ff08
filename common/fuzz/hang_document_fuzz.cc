// libFuzzer entry for the hang document reader (common/hang_document.h): the
// input is the text of a hang.json. Every outcome must be a refusal with a
// one-line reason, or a model that the writer turns into a document that
// reads back to the same model (the writer's text of both is the same);
// never a crash, a hang or a sanitizer report (ASan/UBSan in the same build).
// Seeds: common/fuzz/corpus/hang_document_fuzz/ (documents the writer wrote).
// Run: hang_document_fuzz -max_total_time=60 [corpus dir]
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/hang_document.h"

namespace hd = xpu_timer::hang_document;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  hd::Document doc;
  std::string error;
  std::vector<std::string> warnings;
  if (!hd::parse(text, &doc, &error, &warnings)) {
    if (error.empty() || error.find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  for (const std::string& w : warnings) {
    if (w.empty() || w.find('\n') != std::string::npos) __builtin_trap();
  }
  const std::string written = hd::to_text(doc);
  hd::Document again;
  if (!hd::parse(written, &again, &error, &warnings)) __builtin_trap();  // the writer's own text
  if (!warnings.empty() || again.version != hd::kVersion) __builtin_trap();
  if (hd::to_text(again) != written) __builtin_trap();
  (void)doc.stacks_dir();
  return 0;
}
