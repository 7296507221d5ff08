// The JSON documents the supervisors of a job put in the coordination store
// for each other (node_progress.h, job_fingerprints.h): each a JSON object
// with a "format" number, read from another host, so anything may arrive.
#pragma once

#include <exception>
#include <nlohmann/json.hpp>
#include <string>

namespace xpu_timer::supervisor {

// Parses `text` as a document of `format` and hands the object to `body`,
// which returns whether it is whole and may throw (nlohmann's errors, or
// std::out_of_range for a value out of bounds): malformed. False with one
// line in `error` for anything that is not such a document.
template <typename Body>
bool parse_store_document(const std::string& text, int format, std::string* error, Body body) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "not a JSON object";
    return false;
  }
  try {
    const int got = j.at("format").get<int>();
    if (got != format) {
      *error = "format " + std::to_string(got) + ", this build reads " + std::to_string(format);
      return false;
    }
    return body(j);
  } catch (const std::exception& e) {
    *error = std::string("malformed: ") + e.what();
    return false;
  }
}

}  // namespace xpu_timer::supervisor
