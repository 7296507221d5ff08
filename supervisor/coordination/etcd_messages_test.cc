// etcd's gateway JSON: the request bodies we send, and the decoding of the
// answers etcd 3.4 gave (copied from a real one), of its error answers, and
// of malformed ones.
#include "supervisor/coordination/etcd_messages.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace xpu_timer::supervisor::etcd {
namespace {

const char kHeader[] =
    "\"header\":{\"cluster_id\":\"15118495548433857066\",\"member_id\":\"13668033151171901709\","
    "\"revision\":\"5\",\"raft_term\":\"2\"}";

std::string with_header(const std::string& rest) {
  return "{" + std::string(kHeader) + (rest.empty() ? "" : "," + rest) + "}";
}

TEST(EtcdMessages, PrefixRangeEnd) {
  EXPECT_EQ(prefix_range_end("job/"), "job0");
  EXPECT_EQ(prefix_range_end("a"), "b");
  EXPECT_EQ(prefix_range_end("a\xff"), "b");
  EXPECT_EQ(prefix_range_end("a\xfe\xff\xff"), "a\xff");
  EXPECT_EQ(prefix_range_end("\xff\xff"), std::string(1, '\0'));
  EXPECT_EQ(prefix_range_end(""), std::string(1, '\0'));
}

TEST(EtcdMessages, RequestBodies) {
  EXPECT_EQ(lease_grant_request(10), R"({"ID":"0","TTL":"10"})");
  EXPECT_EQ(lease_keepalive_request(7587835224829165062), R"({"ID":"7587835224829165062"})");
  EXPECT_EQ(put_request("job/n0", "", 42), R"({"key":"am9iL24w","lease":"42","value":""})");
  EXPECT_EQ(put_request("k", "v\n", 1), R"({"key":"aw==","lease":"1","value":"dgo="})");
  // "job/" .. "job0"; "" is every key: "\0" .. "\0".
  EXPECT_EQ(range_prefix_request("job/"), R"({"key":"am9iLw==","range_end":"am9iMA=="})");
  EXPECT_EQ(range_prefix_request(""), R"({"key":"AA==","range_end":"AA=="})");
  // Only what changed at or after revision 42 (0: everything, as above).
  EXPECT_EQ(range_prefix_request("job/", 42),
            R"({"key":"am9iLw==","min_mod_revision":"42","range_end":"am9iMA=="})");
  EXPECT_EQ(range_prefix_request("job/", 0), R"({"key":"am9iLw==","range_end":"am9iMA=="})");
  EXPECT_EQ(delete_request("job/n0"), R"({"key":"am9iL24w"})");
}

TEST(EtcdMessages, GrantAnswer) {
  int64_t lease = 0;
  int64_t ttl = 0;
  std::string error;
  EXPECT_EQ(
      read_grant(200, with_header(R"("ID":"4111120201913504006","TTL":"2")"), &lease, &ttl, &error),
      Outcome::kOk);
  EXPECT_EQ(lease, 4111120201913504006);
  EXPECT_EQ(ttl, 2);
  // Plain JSON numbers are read too.
  EXPECT_EQ(read_grant(200, R"({"ID":9,"TTL":3})", &lease, &ttl, &error), Outcome::kOk);
  EXPECT_EQ(lease, 9);

  EXPECT_EQ(read_grant(200, with_header(R"("ID":"1","TTL":"2","error":"too many")"), &lease, &ttl,
                       &error),
            Outcome::kFailed);
  EXPECT_EQ(error, "lease grant refused: too many");
  EXPECT_EQ(read_grant(200, with_header(""), &lease, &ttl, &error), Outcome::kFailed);
  EXPECT_EQ(error.rfind("lease grant answered without a lease: {\"header\"", 0), 0u) << error;
  EXPECT_EQ(read_grant(200, R"({"ID":"12x","TTL":"2"})", &lease, &ttl, &error), Outcome::kFailed);
  EXPECT_EQ(error, "\"ID\" is not an int64: \"12x\"");
  EXPECT_EQ(read_grant(200, R"({"ID":"99999999999999999999","TTL":"2"})", &lease, &ttl, &error),
            Outcome::kFailed);
  EXPECT_EQ(error, "\"ID\" is not an int64: \"99999999999999999999\"");
  EXPECT_EQ(read_grant(200, R"({"ID":"1","TTL":[2]})", &lease, &ttl, &error), Outcome::kFailed);
  EXPECT_EQ(error, "\"TTL\" is not an int64: [2]");
  EXPECT_EQ(read_grant(200, R"({"ID":18446744073709551615,"TTL":2})", &lease, &ttl, &error),
            Outcome::kFailed);
  EXPECT_EQ(error, "\"ID\" is not an int64: 18446744073709551615");
  EXPECT_EQ(read_grant(200, R"({"ID":"","TTL":"2"})", &lease, &ttl, &error), Outcome::kFailed);
  EXPECT_EQ(read_grant(200, R"({"ID":"-","TTL":"2"})", &lease, &ttl, &error), Outcome::kFailed);
}

TEST(EtcdMessages, KeepAliveAnswer) {
  int64_t ttl = 0;
  std::string error;
  EXPECT_EQ(read_keepalive(200,
                           "{\"result\":{" + std::string(kHeader) +
                               ",\"ID\":\"4111120201913504011\",\"TTL\":\"30\"}}\n",
                           &ttl, &error),
            Outcome::kOk);
  EXPECT_EQ(ttl, 30);
  // Two lines: the first counts.
  EXPECT_EQ(read_keepalive(200, "{\"result\":{\"TTL\":\"4\"}}\n{\"result\":{}}\n", &ttl, &error),
            Outcome::kOk);
  EXPECT_EQ(ttl, 4);
  // A lease etcd does not know: TTL left out.
  EXPECT_EQ(read_keepalive(200, "{\"result\":{" + std::string(kHeader) + ",\"ID\":\"12345\"}}\n",
                           &ttl, &error),
            Outcome::kLeaseNotFound);
  EXPECT_EQ(error, "the lease expired");
  EXPECT_EQ(read_keepalive(200, R"({"result":{"TTL":"-1"}})", &ttl, &error),
            Outcome::kLeaseNotFound);
  // A stream error, in grpc-gateway's shape.
  EXPECT_EQ(read_keepalive(200,
                           R"({"error":{"grpc_code":5,"http_code":404,"message":"etcdserver: )"
                           R"(requested lease not found","http_status":"Not Found"}})",
                           &ttl, &error),
            Outcome::kLeaseNotFound);
  EXPECT_EQ(read_keepalive(200, R"({"error":{"grpc_code":14,"message":"etcdserver: no leader"}})",
                           &ttl, &error),
            Outcome::kFailed);
  EXPECT_EQ(error, "keepalive failed: etcdserver: no leader");
  EXPECT_EQ(read_keepalive(200, "\n\n", &ttl, &error), Outcome::kFailed);
  EXPECT_EQ(error, "empty keepalive answer");
  EXPECT_EQ(read_keepalive(200, R"({"ID":"1"})", &ttl, &error), Outcome::kFailed);
  EXPECT_EQ(error, R"(keepalive answer without "result": {"ID":"1"})");
  EXPECT_EQ(read_keepalive(503, "upstream down", &ttl, &error), Outcome::kFailed);
  EXPECT_EQ(error, "HTTP 503: \"upstream down\"");
}

TEST(EtcdMessages, PutAndDeleteAnswers) {
  std::string error;
  EXPECT_EQ(read_put(200, with_header(""), &error), Outcome::kOk);
  EXPECT_EQ(read_put(404,
                     R"({"error":"etcdserver: requested lease not found","message":"etcdserver: )"
                     R"(requested lease not found","code":5})",
                     &error),
            Outcome::kLeaseNotFound);
  EXPECT_EQ(error, "etcdserver: requested lease not found");
  EXPECT_EQ(read_put(400,
                     R"({"error":"etcdserver: request is too large","message":"etcdserver: )"
                     R"(request is too large","code":3})",
                     &error),
            Outcome::kFailed);
  EXPECT_EQ(error, "HTTP 400: etcdserver: request is too large");
  EXPECT_EQ(read_put(404, "Not Found\n", &error), Outcome::kFailed);
  EXPECT_EQ(error, "HTTP 404: \"Not Found?\"");
  EXPECT_EQ(read_put(200, "", &error), Outcome::kFailed);
  EXPECT_EQ(
      error.rfind("not JSON ([json.exception.parse_error.101] parse error at line 1, column 1", 0),
      0u)
      << error;
  EXPECT_EQ(read_put(200, "[1,2]", &error), Outcome::kFailed);
  EXPECT_EQ(error, "the answer is not a JSON object: [1,2]");

  EXPECT_EQ(read_delete(200, with_header(R"("deleted":"1")"), &error), Outcome::kOk);
  EXPECT_EQ(read_delete(200, with_header(""), &error), Outcome::kOk);
  EXPECT_EQ(read_delete(200, with_header(R"("deleted":true)"), &error), Outcome::kFailed);
  EXPECT_EQ(error, "\"deleted\" is not an int64: true");
}

TEST(EtcdMessages, RangeAnswer) {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;
  std::string error;
  const std::string real = with_header(
      R"("kvs":[{"key":"YQ==","create_revision":"2","mod_revision":"2","version":"1",)"
      R"("lease":"4111120201913504011"},{"key":"YWI=","create_revision":"3","mod_revision":"4",)"
      R"("version":"2","value":"AP8K"}],"count":"2")");
  int64_t count = -1;
  ASSERT_EQ(read_range(200, real, &kvs, &revision, &error, &count), Outcome::kOk) << error;
  EXPECT_EQ(revision, 5);
  EXPECT_EQ(count, 2);
  ASSERT_EQ(kvs.size(), 2u);
  EXPECT_EQ(kvs[0].key, "a");
  EXPECT_EQ(kvs[0].value, "");  // an empty value is left out
  EXPECT_EQ(kvs[0].mod_revision, 2);
  EXPECT_EQ(kvs[1].key, "ab");
  EXPECT_EQ(kvs[1].value, std::string("\0\xff\n", 3));
  EXPECT_EQ(kvs[1].mod_revision, 4);

  // No key matched: "kvs" left out. The revision pointer may be null.
  EXPECT_EQ(read_range(200, with_header(""), &kvs, nullptr, &error, &count), Outcome::kOk);
  EXPECT_TRUE(kvs.empty());
  EXPECT_EQ(count, 0);  // "count" left out too
  // Keys changed since a revision: none sent, the range still counted.
  EXPECT_EQ(read_range(200, with_header(R"("count":"7")"), &kvs, nullptr, &error, &count),
            Outcome::kOk);
  EXPECT_EQ(count, 7);

  const std::pair<std::string, std::string> bad[] = {
      {R"({"kvs":[]})", "range answer without a \"header\" object"},
      {R"({"header":[],"kvs":[]})", "range answer without a \"header\" object"},
      {R"({"header":{"revision":"x"}})", "header: \"revision\" is not an int64: \"x\""},
      {with_header(R"("kvs":{"key":"YQ=="})"), "\"kvs\" is not an array"},
      {with_header(R"("kvs":[{"key":"YQ=="},7])"), "kvs[1]: not an object"},
      {with_header(R"("kvs":[{"value":"YQ=="}])"), "kvs[0]: no \"key\""},
      {with_header(R"("kvs":[{"key":"YQ="}])"),
       "kvs[0]: \"key\": base64 of 3 characters (not a multiple of 4)"},
      {with_header(R"("kvs":[{"key":"YQ==","value":5}])"), "kvs[0]: \"value\" is not a string"},
      {with_header(R"("kvs":[{"key":"YQ==","value":"%%%%"}])"),
       "kvs[0]: \"value\": not base64: character 0 is outside the alphabet"},
      {with_header(R"("kvs":[{"key":"YQ==","mod_revision":"1.5"}])"),
       "kvs[0]: \"mod_revision\" is not an int64: \"1.5\""},
      {with_header(R"("count":"two")"), "\"count\" is not an int64: \"two\""},
  };
  for (const auto& [body, message] : bad) {
    EXPECT_EQ(read_range(200, body, &kvs, &revision, &error), Outcome::kFailed) << body;
    EXPECT_EQ(error, message) << body;
    EXPECT_TRUE(kvs.empty());
  }
  EXPECT_EQ(read_range(200, real.substr(0, real.size() - 3), &kvs, &revision, &error),
            Outcome::kFailed);
  EXPECT_EQ(error.rfind("not JSON ([json.exception.parse_error.101] parse error at line 1", 0), 0u)
      << error;
}

// A transaction of ranges (CoordinationStore::prefetch): the request etcd
// takes and the answer etcd 3.4.23 sent for two ranges, the second empty.
TEST(EtcdMessages, RangesTransaction) {
  const nlohmann::json request =
      nlohmann::json::parse(ranges_request({{"/j/a/", 0}, {"/j/b/", 5}}));
  ASSERT_EQ(request.at("success").size(), 2u);
  EXPECT_FALSE(request.contains("compare"));
  EXPECT_EQ(request.at("success")[0].at("request_range"),
            nlohmann::json::parse(range_prefix_request("/j/a/", 0)));
  EXPECT_EQ(request.at("success")[1].at("request_range"),
            nlohmann::json::parse(range_prefix_request("/j/b/", 5)));

  const std::string real =
      R"({"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437",)"
      R"("revision":"2","raft_term":"2"},"succeeded":true,"responses":[{"response_range":)"
      R"({"header":{"revision":"2"},"kvs":[{"key":"L2ovYS8x","create_revision":"2",)"
      R"("mod_revision":"2","version":"1","value":"eA=="}],"count":"1"}},)"
      R"({"response_range":{"header":{"revision":"2"}}}]})";
  std::vector<PrefixAnswer> answers;
  std::string error;
  ASSERT_EQ(read_ranges(200, real, 2, &answers, &error), Outcome::kOk) << error;
  ASSERT_EQ(answers.size(), 2u);
  ASSERT_EQ(answers[0].kvs.size(), 1u);
  EXPECT_EQ(answers[0].kvs[0].key, "/j/a/1");
  EXPECT_EQ(answers[0].kvs[0].value, "x");
  EXPECT_EQ(answers[0].revision, 2);
  EXPECT_EQ(answers[0].count, 1);
  EXPECT_TRUE(answers[1].kvs.empty());
  EXPECT_EQ(answers[1].revision, 2);
  EXPECT_EQ(answers[1].count, 0);

  const std::pair<std::string, std::string> bad[] = {
      {R"({"header":{"revision":"2"}})", "transaction answer without 2 responses"},
      {R"({"responses":[{"response_range":{"header":{"revision":"2"}}}]})",
       "transaction answer without 2 responses"},
      {R"({"responses":[{"response_put":{}},{"response_range":{"header":{"revision":"2"}}}]})",
       "responses[0]: not a response_range object"},
      {R"({"responses":[7,{"response_range":{"header":{"revision":"2"}}}]})",
       "responses[0]: not a response_range object"},
      {R"({"responses":[{"response_range":{"header":{"revision":"2"}}},{"response_range":{}}]})",
       "responses[1]: range answer without a \"header\" object"},
  };
  for (const auto& [body, message] : bad) {
    EXPECT_EQ(read_ranges(200, body, 2, &answers, &error), Outcome::kFailed) << body;
    EXPECT_EQ(error, message) << body;
    EXPECT_TRUE(answers.empty());
  }
  EXPECT_EQ(read_ranges(200, real.substr(0, real.size() - 3), 2, &answers, &error),
            Outcome::kFailed);
}

// Random damage to real answers: every decoder returns an outcome with a
// message for each failure, never throws or crashes (ASan in `make sanitize`).
TEST(EtcdMessages, MutatedAnswersNeverCrash) {
  const std::string seeds[] = {
      with_header(R"("kvs":[{"key":"YQ==","mod_revision":"2","value":"AP8K"}],"count":"1")"),
      with_header(R"("ID":"4111120201913504006","TTL":"2")"),
      "{\"result\":{\"ID\":\"7\",\"TTL\":\"30\"}}\n",
      R"({"error":"etcdserver: requested lease not found","message":"x","code":5})",
      R"({"header":{"revision":"2"},"succeeded":true,"responses":[{"response_range":)"
      R"({"header":{"revision":"2"},"kvs":[{"key":"L2ovYS8x","mod_revision":"2","value":"eA=="}],)"
      R"("count":"1"}},{"response_range":{"header":{"revision":"2"}}}]})",
  };
  std::mt19937 rng(7);
  for (int round = 0; round < 20000; ++round) {
    std::string body = seeds[round % 5];
    for (int e = 1 + static_cast<int>(rng() % 3); e > 0 && !body.empty(); --e) {
      const size_t at = rng() % body.size();
      if (rng() % 2 == 0) {
        body[at] = "{}[]\",:0-9aA=\\ntf"[rng() % 18];
      } else {
        body.erase(at, 1 + rng() % 4);
      }
    }
    const int status = rng() % 8 == 0 ? 404 : 200;
    std::vector<KeyValue> kvs;
    int64_t a = 0;
    int64_t b = 0;
    std::vector<PrefixAnswer> answers;
    std::string e[6];
    const Outcome outcomes[] = {
        read_range(status, body, &kvs, &a, &e[0]), read_grant(status, body, &a, &b, &e[1]),
        read_keepalive(status, body, &a, &e[2]),   read_put(status, body, &e[3]),
        read_delete(status, body, &e[4]),          read_ranges(status, body, 2, &answers, &e[5]),
    };
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(outcomes[i] == Outcome::kOk, e[i].empty()) << i << ": " << body << ": " << e[i];
    }
  }
}

}  // namespace
}  // namespace xpu_timer::supervisor::etcd
