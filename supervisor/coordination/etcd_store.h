// CoordinationStore on etcd v3 (3.4 and later), through its JSON gateway
// over HTTP/1.1 or HTTPS (POST /v3/lease/grant, /v3/lease/keepalive,
// /v3/kv/put, /v3/kv/range, /v3/kv/deleterange, /v3/kv/txn). With a user,
// every request carries the token of /v3/auth/authenticate; a request etcd
// refuses for its token (expired, etcd restarted) authenticates again and is
// sent once more, within the same deadline. One lease per client,
// granted on the first put or keep_alive and re-granted when etcd says it is
// gone (it expired, or etcd lost its data); the keys this client put are then
// written again under the new lease. Each public call makes one or more
// requests, all within one deadline of `call_timeout` from the call's start.
// Not synchronised: one owner thread (see coordination_store.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/etcd_messages.h"
#include "supervisor/coordination/http_client.h"
#include "supervisor/coordination/prefetched_ranges.h"

namespace xpu_timer::supervisor {

class EtcdStore final : public CoordinationStore {
 public:
  EtcdStore(const StoreEndpoint& endpoint, int lease_ttl_s, std::chrono::milliseconds call_timeout,
            std::shared_ptr<const TlsContext> tls = nullptr, std::string user = "",
            std::string password = "");

  bool put(const std::string& key, const std::string& value) override;
  bool get_prefix(const std::string& prefix, std::vector<KeyValue>* out, int64_t* revision,
                  int64_t min_mod_revision = 0, int64_t* count = nullptr) override;
  bool prefetch(const std::vector<PrefixQuery>& queries) override;
  bool create(const std::string& key, const std::string& value, bool* created) override;
  int64_t lease() const override { return lease_; }
  bool remove(const std::string& key) override;
  bool keep_alive() override;
  int lease_ttl_s() const override { return lease_ttl_s_; }
  const std::string& error() const override { return error_; }

  // The lease the keys are bound to; 0 before the first grant and after the
  // lease was found gone. How many leases this client was granted.
  int64_t lease_id() const { return lease_; }
  int lease_grants() const { return lease_grants_; }
  // How many tokens this client was given (0 without a user).
  int authentications() const { return authentications_; }
  // get_prefix calls answered from a prefetch() instead of a request.
  uint64_t prefetched_reads() const { return prefetched_.taken(); }

 private:
  using Deadline = HttpClient::Deadline;
  enum class Result { kOk, kLeaseGone, kFailed };

  // One request; kOk with the answer's status and body, kFailed with error_ set.
  bool request(const char* path, const std::string& body, Deadline deadline,
               HttpResponse* response);
  bool authenticate(Deadline deadline);
  Result write_result(const char* path, etcd::Outcome outcome, const std::string& why);
  Result put_one(const std::string& key, const std::string& value, Deadline deadline);
  // create(): kOk with `created` set.
  Result create_one(const std::string& key, const std::string& value, Deadline deadline,
                    bool* created);
  // Grants a lease if there is none and writes every key of published_ under it.
  bool restore(Deadline deadline);
  bool fail(const char* path, const std::string& why);
  Deadline deadline() const { return std::chrono::steady_clock::now() + call_timeout_; }

  HttpClient http_;
  PrefetchedRanges prefetched_;
  std::string name_;  // "etcd HOST:PORT", the start of every error line
  int lease_ttl_s_;
  std::chrono::milliseconds call_timeout_;
  int64_t lease_ = 0;
  int lease_grants_ = 0;
  // Every key put and not removed, with its latest value: what a new lease
  // must carry. `republish_` is set while some of them are not yet written
  // under the current lease.
  std::map<std::string, std::string> published_;
  std::set<std::string> created_;  // those of published_ claimed by create()
  std::string user_;
  std::string password_;
  std::string token_;  // "" until authenticated (and after etcd refused it)
  int authentications_ = 0;
  bool republish_ = false;
  std::string error_;
};

}  // namespace xpu_timer::supervisor
