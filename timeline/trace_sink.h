// Where a trace's JSON text goes while it is built: events are serialised one
// by one, so that a dump of a thousand ranks (millions of records) never
// exists as one JSON tree in memory. Kept in a string, or flushed to a file
// every megabyte. One thread.
#pragma once

#include <cstddef>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace xpu_timer::timeline {

class TraceSink {
 public:
  // file == nullptr: everything stays in text().
  explicit TraceSink(std::FILE* file = nullptr);
  TraceSink(const TraceSink&) = delete;
  TraceSink& operator=(const TraceSink&) = delete;

  // Starts the document: {"traceEvents":[
  void begin();
  void add(const nlohmann::json& event);
  // Closes the event list and appends "otherData": ...}.
  void end(const nlohmann::json& other_data);

  size_t events() const { return events_; }
  const std::string& text() const { return text_; }
  // False when a write to the file failed (errno kept in write_errno()).
  bool ok() const { return write_errno_ == 0; }
  int write_errno() const { return write_errno_; }

 private:
  void flush_if(size_t threshold);
  std::FILE* file_;
  std::string text_;
  size_t events_ = 0;
  int write_errno_ = 0;
};

}  // namespace xpu_timer::timeline
