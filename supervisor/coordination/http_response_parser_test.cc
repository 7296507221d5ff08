// The HTTP/1.1 answer parser of the coordination store's client: each
// framing, answers split at every byte, and the malformed, truncated and
// oversized answers a server on the network may send.
#include "supervisor/coordination/http_response_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace xpu_timer::supervisor {
namespace {

using State = HttpResponseParser::State;

// Feeds `raw` in pieces of `piece` bytes, then the connection's end if still
// unfinished.
HttpResponseParser parse(const std::string& raw, size_t piece = 1 << 20, bool close = true) {
  HttpResponseParser p;
  for (size_t i = 0; i < raw.size() && p.state() == State::kNeedMore; i += piece) {
    p.feed(raw.data() + i, std::min(piece, raw.size() - i));
  }
  if (close) p.finish();
  return p;
}

std::string error_of(const std::string& raw) {
  const HttpResponseParser p = parse(raw);
  EXPECT_EQ(p.state(), State::kError) << raw;
  return p.error();
}

const char kEtcdKeepAlive[] =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: application/json\r\n"
    "Grpc-Metadata-Content-Type: application/grpc\r\n"
    "Transfer-Encoding: chunked\r\n"
    "\r\n"
    "1c\r\n{\"result\":{\"ID\":\"7\",\"TTL\":\"5\r\n"
    "3;ext=1\r\n\"}}\r\n"
    "1\r\n\n\r\n"
    "0\r\n"
    "Grpc-Trailer-Content-Type: application/grpc\r\n"
    "\r\n";

TEST(HttpResponseParser, ContentLengthBodyAtAnySplit) {
  const std::string raw =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length:  7 \r\n\r\n{\"a\":1}";
  for (size_t piece = 1; piece <= raw.size(); ++piece) {
    const HttpResponseParser p = parse(raw, piece, /*close=*/false);
    ASSERT_EQ(p.state(), State::kComplete) << piece;
    EXPECT_EQ(p.status(), 200);
    EXPECT_EQ(p.body(), "{\"a\":1}");
  }
  // Bytes after the answer are ignored; a short body waits for more.
  EXPECT_EQ(parse(raw + "junk", 1 << 20, false).body(), "{\"a\":1}");
  EXPECT_EQ(parse(raw.substr(0, raw.size() - 1), 1 << 20, false).state(), State::kNeedMore);
}

TEST(HttpResponseParser, ChunkedBodyWithExtensionsAndTrailersAtAnySplit) {
  const std::string raw = kEtcdKeepAlive;
  for (size_t piece = 1; piece <= raw.size(); ++piece) {
    const HttpResponseParser p = parse(raw, piece, /*close=*/false);
    ASSERT_EQ(p.state(), State::kComplete) << piece;
    EXPECT_EQ(p.body(), "{\"result\":{\"ID\":\"7\",\"TTL\":\"5\"}}\n");
  }
  // Without the blank line after the trailers it is not finished.
  EXPECT_EQ(parse(raw.substr(0, raw.size() - 2), 1 << 20, false).state(), State::kNeedMore);
  // Chunked wins over a Content-Length.
  const HttpResponseParser both = parse(
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "2\r\nab\r\n0\r\n\r\n");
  EXPECT_EQ(both.state(), State::kComplete);
  EXPECT_EQ(both.body(), "ab");
}

TEST(HttpResponseParser, OtherFramings) {
  HttpResponseParser p = parse("HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\nNot Found\n", 3, false);
  EXPECT_EQ(p.state(), State::kNeedMore);  // runs to the connection's end
  EXPECT_EQ(p.finish(), State::kComplete);
  EXPECT_EQ(p.status(), 404);
  EXPECT_EQ(p.body(), "Not Found\n");

  p = parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", 5,
            false);
  EXPECT_EQ(p.state(), State::kComplete);
  EXPECT_EQ(p.status(), 201);
  EXPECT_EQ(p.body(), "ok");

  p = parse("HTTP/1.1 204 No Content\r\n\r\n", 1 << 20, false);
  EXPECT_EQ(p.state(), State::kComplete);
  EXPECT_EQ(p.body(), "");

  p = parse("HTTP/1.1 500\r\nContent-Length: 0\r\n\r\n", 1 << 20, false);
  EXPECT_EQ(p.state(), State::kComplete);
  EXPECT_EQ(p.status(), 500);
}

TEST(HttpResponseParser, MalformedAnswersGiveOneLine) {
  EXPECT_EQ(error_of(""), "connection closed without an answer");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nContent-Le"),
            "connection closed after 27 bytes, inside the answer's header");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"),
            "connection closed after 44 bytes, before the end of the answer's body");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"),
            "connection closed after 52 bytes, before the end of the answer's body");
  EXPECT_EQ(error_of("SSH-2.0-OpenSSH_9.2\r\n\r\n"),
            "not an HTTP/1.x status line: \"SSH-2.0-OpenSSH_9.2\"");
  EXPECT_EQ(error_of("HTTP/2 200\r\n\r\n"), "not an HTTP/1.x status line: \"HTTP/2 200\"");
  EXPECT_EQ(error_of("HTTP/1.1 2x0 OK\r\n\r\n"),
            "not an HTTP/1.x status line: \"HTTP/1.1 2x0 OK\"");
  EXPECT_EQ(error_of("HTTP/1.1 2000 OK\r\n\r\n"),
            "not an HTTP/1.x status line: \"HTTP/1.1 2000 OK\"");
  EXPECT_EQ(error_of("HTTP/1.1 099 Low\r\n\r\n"), "HTTP status 99 out of range");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"),
            "malformed header line \"no colon here\"");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\n: empty name\r\n\r\n"),
            "malformed header line \": empty name\"");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"), "bad Content-Length \"-1\"");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nContent-Length: 1e3\r\n\r\n"),
            "bad Content-Length \"1e3\"");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
            "bad Content-Length \"99999999999999999999999\"");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nContent-Length: 67108865\r\n\r\n"),
            "bad Content-Length \"67108865\"");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc"),
            "bad Content-Length \"3\"");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
            "unsupported Transfer-Encoding \"gzip\"");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            "bad chunk size \"zz\"");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n"),
            "bad chunk size \"\"");
  EXPECT_EQ(
      error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n"),
      "bad chunk size \"fffffffffffffffffff\"");
  EXPECT_EQ(error_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY0\r\n\r\n"),
            "chunk of 2 bytes not followed by CRLF");
  // Control bytes in what is quoted back are made printable.
  EXPECT_EQ(error_of(std::string("\x01\x02 garbage\xff\r\n\r\n")),
            "not an HTTP/1.x status line: \"?? garbage?\"");
}

TEST(HttpResponseParser, OversizedAnswersAreRefused) {
  HttpResponseParser head;
  const std::string line = "X-Pad: " + std::string(1000, 'a') + "\r\n";
  head.feed("HTTP/1.1 200 OK\r\n", 17);
  while (head.state() == State::kNeedMore) head.feed(line.data(), line.size());
  EXPECT_EQ(head.error(), "answer's header longer than 64 KiB");

  HttpResponseParser body;
  const std::string start = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  body.feed(start.data(), start.size());
  const std::string chunk = "100000\r\n" + std::string(1 << 20, 'x') + "\r\n";
  for (int i = 0; i < 100 && body.state() == State::kNeedMore; ++i) {
    body.feed(chunk.data(), chunk.size());
  }
  EXPECT_EQ(body.error(), "answer larger than 64 MiB");

  HttpResponseParser line_only;
  const std::string chunked_start = start + std::string(70000, '1');
  line_only.feed(chunked_start.data(), chunked_start.size());
  EXPECT_EQ(line_only.error(), "chunk header or trailer line too long");
}

// Random damage to real answers, fed at random splits: the parser ends in
// a state with a body or an error, never crashes or reads out of bounds
// (run under ASan by `make sanitize`).
TEST(HttpResponseParser, MutatedAnswersNeverCrash) {
  const std::string seeds[] = {
      kEtcdKeepAlive,
      "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{\"header\":{}}",
      "HTTP/1.1 404 Not Found\r\nTrailer: X\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4\r\n{\"e\"\r\n1\r\n}\r\n0\r\nX: y\r\n\r\n",
  };
  std::mt19937 rng(20261123);
  for (int round = 0; round < 20000; ++round) {
    std::string raw = seeds[round % 3];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % raw.size();
      switch (rng() % 3) {
        case 0:
          raw[at] = static_cast<char>(rng());
          break;
        case 1:
          raw.erase(at, 1 + rng() % 8);
          break;
        default:
          raw.insert(at, std::string(1 + rng() % 4, "0\r\n:;f "[rng() % 7]));
      }
      if (raw.empty()) raw = "H";
    }
    const HttpResponseParser p = parse(raw, 1 + rng() % 16, rng() % 2 == 0);
    if (p.state() == State::kError) {
      EXPECT_FALSE(p.error().empty());
    } else if (p.state() == State::kComplete) {
      EXPECT_GE(p.status(), 200);
      EXPECT_LE(p.body().size(), raw.size());
    }
  }
}

}  // namespace
}  // namespace xpu_timer::supervisor
