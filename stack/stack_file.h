// The stack file `<dump>/RRRRR-WWWWW.stacktrace` (format: notes/contract.md,
// "Stack file format"): writer, and a loader used by tests and by the forked
// collector. JSON errors are caught here and returned as one line.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "stack/stack_types.h"

namespace xpu_timer::stack {

// "00003-00008.stacktrace"
std::string stack_file_name(int rank, int world_size);

nlohmann::json to_json(const ProcessStack& stack);
// nullopt and *error on a document that does not follow the format.
std::optional<ProcessStack> from_json(const nlohmann::json& doc, std::string* error);

// Writes atomically (temporary file + rename) so readers never see half a file.
bool write_stack_file(const ProcessStack& stack, const std::string& path, std::string* error);
std::optional<ProcessStack> load_stack_file(const std::string& path, std::string* error);

}  // namespace xpu_timer::stack
