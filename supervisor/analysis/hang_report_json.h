// The hang document of GET /hang, <dump-dir>/hang.json and every dump
// folder's hang.json, assembled in this one place from the detector's report
// and what the supervisor knows beside it. The format (its keys, version,
// writer and reader) is common/hang_document.h's; this file only fills it.
// Pure: no threads, sockets or files.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/hang_document.h"
#include "supervisor/analysis/hang_detector.h"

namespace xpu_timer::supervisor {

// What the document holds beside the verdict (whose report gives the
// timeout_s). GET /hang and hang.json fill
// the same parts; they differ only in which dumps `stacks` and `timeline`
// name (GET /hang: the latest; hang.json and the dump folders: the hang's
// own).
struct HangDocumentParts {
  // The collective mismatches found (collective_check.h), oldest first, and
  // their count since the start (the list is bounded, the count is not).
  nlohmann::json mismatches = nlohmann::json::array();
  uint64_t mismatch_total = 0;
  uint64_t collectives_checked = 0;
  // The multi-node link (url, job_id, connected, alarm, other_nodes, ...,
  // collectives); null without --coordinator.
  nlohmann::json coordinator;
  // A stack dump (stack_dump_json: dir, in_progress, ranks, ...); null: none.
  nlohmann::json stacks;
  // A flight-recorder dump, {"dir": ...}; null: none.
  nlohmann::json timeline;
};

// The verdict part of the document: every key the detector's report gives.
hang_document::Document hang_document_of(const HangReport& report);

// The whole document as text (hang_document::to_text): the one builder of
// GET /hang's body and of every hang.json.
std::string hang_document_text(const HangReport& report, const HangDocumentParts& parts);
// The same document as JSON (GET /overview reads it without the text).
nlohmann::json hang_document_json(const HangReport& report, const HangDocumentParts& parts);

}  // namespace xpu_timer::supervisor
