// The JSON documents the supervisors of a job put in the coordination store
// for each other (node_progress.h, job_fingerprints.h): each a JSON object
// with a "format" number, read from another host, so anything may arrive.
#pragma once

#include <cstdint>
#include <exception>
#include <limits>
#include <type_traits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace xpu_timer::supervisor {

// An integer field of a document: a JSON integer within [lo, hi]. Anything
// else (a float, a string, a number out of range) throws std::out_of_range
// naming `what`: nlohmann's get<int>() of a float out of range is undefined
// behaviour, and these documents come from anybody who can write to the store.
inline int64_t doc_integer(const nlohmann::json& v, const char* what, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) throw std::out_of_range(std::string(what) + " is not an integer");
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) throw std::out_of_range(std::string(what) + " out of range");
    return static_cast<int64_t>(u);
  }
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) throw std::out_of_range(std::string(what) + " out of range");
  return x;
}

// A field of a document as T; for an integer T the value must be a JSON
// integer that T holds (see doc_integer), anything else throws
// std::out_of_range naming `what`.
template <typename T>
T doc_get(const nlohmann::json& v, const char* what) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!v.is_number_integer()) throw std::out_of_range(std::string(what) + " is not an integer");
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        throw std::out_of_range(std::string(what) + " out of range");
      }
      return static_cast<T>(u);
    }
    const int64_t x = v.get<int64_t>();
    bool ok = true;
    if constexpr (std::is_unsigned_v<T>) {
      ok = x >= 0 && static_cast<uint64_t>(x) <= std::numeric_limits<T>::max();
    } else {
      ok = x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
           x <= static_cast<int64_t>(std::numeric_limits<T>::max());
    }
    if (!ok) throw std::out_of_range(std::string(what) + " out of range");
    return static_cast<T>(x);
  } else {
    return v.get<T>();
  }
}

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
    const int64_t got = doc_integer(j.at("format"), "format", INT32_MIN, INT32_MAX);
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
