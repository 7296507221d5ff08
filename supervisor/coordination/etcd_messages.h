// The JSON bodies of etcd v3's gateway (/v3/...) for what EtcdStore does,
// and the decoding of its answers. etcd 3.4's gateway (grpc-gateway) sends
// every int64 as a JSON string and leaves out fields at their zero value (an
// empty value, a TTL of 0); keys and values are base64. The answers come from
// the network: decoding checks every type and returns one line naming the
// field, never throws. Pure functions, usable from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/prefetched_ranges.h"

namespace xpu_timer::supervisor::etcd {

// The end of the key range holding every key that starts with `prefix`: the
// prefix with its last byte below 0xff incremented (trailing 0xff bytes
// dropped), or "\0" (etcd's "to the end of the keyspace") when there is none.
std::string prefix_range_end(const std::string& prefix);

std::string lease_grant_request(int64_t ttl_s);
std::string lease_keepalive_request(int64_t lease);
std::string put_request(const std::string& key, const std::string& value, int64_t lease);
// With `min_mod_revision` > 0, etcd answers only the keys whose last change
// is at or after that revision (RangeRequest.min_mod_revision); its "count"
// still counts every key of the range.
std::string range_prefix_request(const std::string& prefix, int64_t min_mod_revision = 0);
// A transaction of range_prefix_request's, one per query, without a
// condition (POST /v3/kv/txn): one request, one revision for all.
std::string ranges_request(const std::vector<PrefixQuery>& queries);
std::string delete_request(const std::string& key);
// A transaction that puts `key` under `lease` only if the key does not exist
// (its create_revision is 0): one writer per key (POST /v3/kv/txn).
std::string create_request(const std::string& key, const std::string& value, int64_t lease);
// POST /v3/auth/authenticate: {name, password}.
std::string authenticate_request(const std::string& name, const std::string& password);

enum class Outcome {
  kOk,
  kLeaseNotFound,  // the lease named in the request no longer exists
  kFailed,         // `error` says why
};

// Each takes the HTTP status and body of the answer. A non-200 answer is
// kFailed with etcd's message ("HTTP 400: etcdserver: ..."), except a lease
// that does not exist, which is kLeaseNotFound.
Outcome read_grant(int status, const std::string& body, int64_t* lease, int64_t* ttl_s,
                   std::string* error);
// The keepalive answer is a stream of JSON lines ({"result": ...}); the
// first one counts. A TTL of 0 (left out) means the lease is gone.
Outcome read_keepalive(int status, const std::string& body, int64_t* ttl_s, std::string* error);
Outcome read_put(int status, const std::string& body, std::string* error);
// `count` (may be null): the answer's "count", every key of the range.
Outcome read_range(int status, const std::string& body, std::vector<KeyValue>* out,
                   int64_t* revision, std::string* error, int64_t* count = nullptr);
// The answer to ranges_request of `n` queries: each range as read_range
// reads one.
Outcome read_ranges(int status, const std::string& body, size_t n, std::vector<PrefixAnswer>* out,
                    std::string* error);
Outcome read_delete(int status, const std::string& body, std::string* error);
// The answer to create_request: `created` false when the key existed.
Outcome read_create(int status, const std::string& body, bool* created, std::string* error);
// The token of an authenticate answer (printable, no spaces: it is sent
// back as the Authorization header).
Outcome read_authenticate(int status, const std::string& body, std::string* token,
                          std::string* error);
// Whether an answer says that the request's token was refused (expired, the
// server restarted, none sent): authenticate again.
bool is_auth_rejected(int status, const std::string& body);

}  // namespace xpu_timer::supervisor::etcd
