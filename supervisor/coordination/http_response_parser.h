// Incremental parser of one HTTP/1.1 response, as the coordination store's
// client (http_client.h) reads it from a socket: the status line, the headers
// it needs (Content-Length, Transfer-Encoding: chunked) and the body, framed
// by Content-Length, by chunks (trailers skipped) or by the end of the
// connection. Interim 1xx responses are skipped. The other side is a server
// on the network: every malformed or oversized answer ends in kError with one
// line, never in a crash or an unbounded buffer. Used by one thread.
#pragma once

#include <cstddef>
#include <string>

namespace xpu_timer::supervisor {

class HttpResponseParser {
 public:
  enum class State { kNeedMore, kComplete, kError };

  // Answers larger than this (head and body) are refused.
  static constexpr size_t kMaxResponseBytes = 64u << 20;
  static constexpr size_t kMaxHeadBytes = 64u << 10;

  // Adds bytes read from the connection. Bytes after a complete response are ignored.
  State feed(const char* data, size_t size);
  // The server closed the connection: completes a body that runs to the end
  // of the connection; anything else unfinished is an error ("closed after N bytes ...").
  State finish();

  State state() const { return state_; }
  int status() const { return status_; }
  const std::string& body() const { return body_; }
  const std::string& error() const { return error_; }

 private:
  enum class Framing { kLength, kChunked, kUntilClose };
  void advance();
  bool parse_head(size_t head_end);
  void advance_chunks();
  State fail(std::string message);

  State state_ = State::kNeedMore;
  std::string raw_;  // everything received; parsing consumes it from `pos_`
  size_t pos_ = 0;
  bool in_body_ = false;
  Framing framing_ = Framing::kUntilClose;
  size_t content_length_ = 0;
  bool in_trailers_ = false;
  int status_ = 0;
  std::string body_;
  std::string error_;
};

}  // namespace xpu_timer::supervisor
