#include "supervisor/coordination/http_response_parser.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

#include "common/parse_number.h"

namespace xpu_timer::supervisor {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A printable excerpt of untrusted bytes for an error line.
std::string excerpt(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 60)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return out;
}

// Parses a decimal (base 10) or hexadecimal (base 16) count into `out`;
// false for anything else or a value over `limit`.
bool parse_count(std::string_view s, int base, size_t limit, size_t* out) {
  const std::optional<uint64_t> v = parse_uint(s, base);
  if (!v || *v > limit) return false;
  *out = static_cast<size_t>(*v);
  return true;
}

}  // namespace

HttpResponseParser::State HttpResponseParser::fail(std::string message) {
  error_ = std::move(message);
  state_ = State::kError;
  return state_;
}

HttpResponseParser::State HttpResponseParser::feed(const char* data, size_t size) {
  if (state_ != State::kNeedMore) return state_;
  if (raw_.size() + size > kMaxResponseBytes) {
    return fail("answer larger than " + std::to_string(kMaxResponseBytes >> 20) + " MiB");
  }
  raw_.append(data, size);
  advance();
  return state_;
}

HttpResponseParser::State HttpResponseParser::finish() {
  if (state_ != State::kNeedMore) return state_;
  if (in_body_ && framing_ == Framing::kUntilClose) {
    body_ = raw_.substr(pos_);
    state_ = State::kComplete;
    return state_;
  }
  if (!in_body_) {
    return fail(raw_.empty() ? "connection closed without an answer"
                             : "connection closed after " + std::to_string(raw_.size()) +
                                   " bytes, inside the answer's header");
  }
  return fail("connection closed after " + std::to_string(raw_.size()) +
              " bytes, before the end of the answer's body");
}

void HttpResponseParser::advance() {
  while (state_ == State::kNeedMore && !in_body_) {
    const size_t head_end = raw_.find("\r\n\r\n", pos_);
    if (head_end == std::string::npos) {
      if (raw_.size() - pos_ > kMaxHeadBytes) {
        fail("answer's header longer than " + std::to_string(kMaxHeadBytes >> 10) + " KiB");
      }
      return;
    }
    if (!parse_head(head_end)) return;
  }
  if (state_ != State::kNeedMore) return;
  switch (framing_) {
    case Framing::kLength:
      if (raw_.size() - pos_ >= content_length_) {
        body_ = raw_.substr(pos_, content_length_);
        state_ = State::kComplete;
      }
      return;
    case Framing::kChunked:
      advance_chunks();
      return;
    case Framing::kUntilClose:
      return;  // finish() completes it
  }
}

bool HttpResponseParser::parse_head(size_t head_end) {
  const std::string_view head(raw_.data() + pos_, head_end - pos_);
  const size_t line_end = std::min(head.find("\r\n"), head.size());
  const std::string_view status_line = head.substr(0, line_end);
  // "HTTP/1.1 200 OK": the version, one space, three digits, then a space or the end.
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ' ||
      !std::isdigit(static_cast<unsigned char>(status_line[9])) ||
      !std::isdigit(static_cast<unsigned char>(status_line[10])) ||
      !std::isdigit(static_cast<unsigned char>(status_line[11])) ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    fail("not an HTTP/1.x status line: \"" + excerpt(status_line) + "\"");
    return false;
  }
  status_ = (status_line[9] - '0') * 100 + (status_line[10] - '0') * 10 + (status_line[11] - '0');
  if (status_ < 100) {
    fail("HTTP status " + std::to_string(status_) + " out of range");
    return false;
  }
  bool chunked = false;
  bool has_length = false;
  size_t length = 0;
  size_t at = line_end;
  while (at < head.size()) {
    at += 2;  // the CRLF ending the previous line
    const size_t end = std::min(head.find("\r\n", at), head.size());
    const std::string_view line = head.substr(at, end - at);
    at = end;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      fail("malformed header line \"" + excerpt(line) + "\"");
      return false;
    }
    const std::string name = lower(trim(line.substr(0, colon)));
    const std::string_view value = trim(line.substr(colon + 1));
    if (name == "content-length") {
      size_t v = 0;
      if (!parse_count(value, 10, kMaxResponseBytes, &v) || (has_length && v != length)) {
        fail("bad Content-Length \"" + excerpt(value) + "\"");
        return false;
      }
      has_length = true;
      length = v;
    } else if (name == "transfer-encoding") {
      // Only chunked is understood; it must be the last coding.
      const std::string v = lower(value);
      const size_t last = v.rfind(',');
      if (trim(last == std::string::npos ? std::string_view(v)
                                         : std::string_view(v).substr(last + 1)) != "chunked") {
        fail("unsupported Transfer-Encoding \"" + excerpt(value) + "\"");
        return false;
      }
      chunked = true;
    }
  }
  pos_ = head_end + 4;
  if (status_ < 200) return true;  // interim (100 Continue): the real answer follows
  in_body_ = true;
  if (status_ == 204 || status_ == 304) {
    framing_ = Framing::kLength;
    content_length_ = 0;
  } else if (chunked) {
    framing_ = Framing::kChunked;  // wins over Content-Length (RFC 9112 6.3)
  } else if (has_length) {
    framing_ = Framing::kLength;
    content_length_ = length;
  } else {
    framing_ = Framing::kUntilClose;
  }
  return true;
}

void HttpResponseParser::advance_chunks() {
  while (state_ == State::kNeedMore) {
    const size_t line_end = raw_.find("\r\n", pos_);
    if (line_end == std::string::npos) {
      if (raw_.size() - pos_ > kMaxHeadBytes) fail("chunk header or trailer line too long");
      return;
    }
    const std::string_view line(raw_.data() + pos_, line_end - pos_);
    if (in_trailers_) {
      pos_ = line_end + 2;
      if (line.empty()) state_ = State::kComplete;
      continue;
    }
    std::string_view size_text = line.substr(0, line.find(';'));  // chunk extensions are ignored
    size_text = trim(size_text);
    size_t size = 0;
    if (!parse_count(size_text, 16, kMaxResponseBytes, &size)) {
      fail("bad chunk size \"" + excerpt(line) + "\"");
      return;
    }
    if (size == 0) {
      pos_ = line_end + 2;
      in_trailers_ = true;
      continue;
    }
    const size_t data = line_end + 2;
    if (raw_.size() < data + size + 2) return;
    if (raw_.compare(data + size, 2, "\r\n") != 0) {
      fail("chunk of " + std::to_string(size) + " bytes not followed by CRLF");
      return;
    }
    if (body_.size() + size > kMaxResponseBytes) {
      fail("answer larger than " + std::to_string(kMaxResponseBytes >> 20) + " MiB");
      return;
    }
    body_.append(raw_, data, size);
    pos_ = data + size + 2;
  }
}

}  // namespace xpu_timer::supervisor
