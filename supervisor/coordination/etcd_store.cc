#include "supervisor/coordination/etcd_store.h"

#include "common/clock.h"
#include "supervisor/coordination/etcd_messages.h"

namespace xpu_timer::supervisor {

namespace {
constexpr char kGrant[] = "/v3/lease/grant";
constexpr char kKeepAlive[] = "/v3/lease/keepalive";
constexpr char kPut[] = "/v3/kv/put";
constexpr char kRange[] = "/v3/kv/range";
constexpr char kDelete[] = "/v3/kv/deleterange";
constexpr char kTxn[] = "/v3/kv/txn";
constexpr char kAuthenticate[] = "/v3/auth/authenticate";
}  // namespace

EtcdStore::EtcdStore(const StoreEndpoint& endpoint, int lease_ttl_s,
                     std::chrono::milliseconds call_timeout, std::shared_ptr<const TlsContext> tls,
                     std::string user, std::string password)
    : http_(endpoint.host, endpoint.port, std::move(tls)),
      name_(std::string(endpoint.tls ? "etcd https " : "etcd ") +
            (endpoint.host.find(':') != std::string::npos ? "[" + endpoint.host + "]"
                                                          : endpoint.host) +
            ":" + std::to_string(endpoint.port)),
      lease_ttl_s_(lease_ttl_s),
      call_timeout_(call_timeout),
      user_(std::move(user)),
      password_(std::move(password)) {}

bool EtcdStore::fail(const char* path, const std::string& why) {
  error_ = name_ + ": " + path + ": " + why;
  return false;
}

bool EtcdStore::authenticate(Deadline deadline) {
  HttpResponse r;
  std::string why;
  if (!http_.post(kAuthenticate, etcd::authenticate_request(user_, password_), deadline, &r,
                  &why)) {
    return fail(kAuthenticate, why);
  }
  if (etcd::read_authenticate(r.status, r.body, &token_, &why) != etcd::Outcome::kOk) {
    token_.clear();
    return fail(kAuthenticate, "as user '" + user_ + "': " + why);
  }
  ++authentications_;
  return true;
}

bool EtcdStore::request(const char* path, const std::string& body, Deadline deadline,
                        HttpResponse* response) {
  std::string why;
  // A token refused once (it expired: etcd's --auth-token-ttl, 300 s by
  // default, or etcd restarted) is renewed and the request sent again.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!user_.empty() && token_.empty() && !authenticate(deadline)) return false;
    if (!http_.post(path, body, deadline, response, &why, token_)) break;
    if (user_.empty() || attempt > 0 || !etcd::is_auth_rejected(response->status, response->body)) {
      return true;
    }
    token_.clear();
  }
  if (why.empty()) return true;  // refused twice: the caller reads etcd's answer
  if (why.rfind("timed out", 0) == 0) {
    why += " (call timeout " + std::to_string(call_timeout_.count()) + " ms)";
  }
  return fail(path, why);
}

// A write's answer as a Result (kFailed with error_ set).
EtcdStore::Result EtcdStore::write_result(const char* path, etcd::Outcome outcome,
                                          const std::string& why) {
  switch (outcome) {
    case etcd::Outcome::kOk:
      return Result::kOk;
    case etcd::Outcome::kLeaseNotFound:
      return Result::kLeaseGone;
    case etcd::Outcome::kFailed:
      break;
  }
  fail(path, why);
  return Result::kFailed;
}

EtcdStore::Result EtcdStore::create_one(const std::string& key, const std::string& value,
                                        Deadline deadline, bool* created) {
  prefetched_.written(key);
  HttpResponse r;
  if (!request(kTxn, etcd::create_request(key, value, lease_), deadline, &r)) {
    return Result::kFailed;
  }
  std::string why;
  return write_result(kTxn, etcd::read_create(r.status, r.body, created, &why), why);
}

EtcdStore::Result EtcdStore::put_one(const std::string& key, const std::string& value,
                                     Deadline deadline) {
  prefetched_.written(key);
  HttpResponse r;
  if (!request(kPut, etcd::put_request(key, value, lease_), deadline, &r)) return Result::kFailed;
  std::string why;
  return write_result(kPut, etcd::read_put(r.status, r.body, &why), why);
}

bool EtcdStore::restore(Deadline deadline) {
  if (lease_ == 0) {
    HttpResponse r;
    if (!request(kGrant, etcd::lease_grant_request(lease_ttl_s_), deadline, &r)) return false;
    std::string why;
    int64_t lease = 0;
    int64_t ttl = 0;
    if (etcd::read_grant(r.status, r.body, &lease, &ttl, &why) != etcd::Outcome::kOk) {
      return fail(kGrant, why);
    }
    lease_ = lease;
    ++lease_grants_;
    republish_ = !published_.empty();
  }
  if (!republish_) return true;
  for (const auto& [key, value] : published_) {
    bool ignored = false;  // a claim another holds now stays theirs: the view sees it
    switch (created_.count(key) != 0 ? create_one(key, value, deadline, &ignored)
                                     : put_one(key, value, deadline)) {
      case Result::kOk:
        continue;
      case Result::kLeaseGone: {
        const int64_t gone = lease_;
        lease_ = 0;
        return fail(kPut, "lease " + std::to_string(gone) +
                              " vanished while its keys were written; retried on the next call");
      }
      case Result::kFailed:
        return false;
    }
  }
  republish_ = false;
  return true;
}

bool EtcdStore::put(const std::string& key, const std::string& value) {
  const Deadline end = deadline();
  if (key.empty()) return fail(kPut, "empty key");
  published_[key] = value;
  if (lease_ != 0 && !republish_) {
    switch (put_one(key, value, end)) {
      case Result::kOk:
        return true;
      case Result::kFailed:
        return false;
      case Result::kLeaseGone:
        lease_ = 0;  // its keys are gone: a new lease carries them all, this one included
        break;
    }
  }
  return restore(end);
}

bool EtcdStore::keep_alive() {
  const Deadline end = deadline();
  if (lease_ != 0) {
    HttpResponse r;
    if (!request(kKeepAlive, etcd::lease_keepalive_request(lease_), end, &r)) return false;
    std::string why;
    int64_t ttl = 0;
    switch (etcd::read_keepalive(r.status, r.body, &ttl, &why)) {
      case etcd::Outcome::kOk:
        break;
      case etcd::Outcome::kLeaseNotFound:
        lease_ = 0;
        break;
      case etcd::Outcome::kFailed:
        return fail(kKeepAlive, why);
    }
  }
  return restore(end);
}

bool EtcdStore::get_prefix(const std::string& prefix, std::vector<KeyValue>* out, int64_t* revision,
                           int64_t min_mod_revision, int64_t* count) {
  out->clear();
  if (prefetched_.take(prefix, min_mod_revision, monotonic_ns(), out, revision, count)) return true;
  HttpResponse r;
  if (!request(kRange, etcd::range_prefix_request(prefix, min_mod_revision), deadline(), &r)) {
    return false;
  }
  std::string why;
  if (etcd::read_range(r.status, r.body, out, revision, &why, count) != etcd::Outcome::kOk) {
    return fail(kRange, why);
  }
  return true;
}

bool EtcdStore::prefetch(const std::vector<PrefixQuery>& queries) {
  prefetched_.clear();
  if (queries.empty()) return true;
  HttpResponse r;
  if (!request(kTxn, etcd::ranges_request(queries), deadline(), &r)) return false;
  std::string why;
  std::vector<PrefixAnswer> answers;
  if (etcd::read_ranges(r.status, r.body, queries.size(), &answers, &why) != etcd::Outcome::kOk) {
    return fail(kTxn, why);
  }
  prefetched_.keep(queries, std::move(answers), monotonic_ns());
  return true;
}

bool EtcdStore::create(const std::string& key, const std::string& value, bool* created) {
  const Deadline end = deadline();
  *created = false;
  if (key.empty()) return fail(kTxn, "empty key");
  published_[key] = value;
  created_.insert(key);
  if (lease_ != 0 && !republish_) {
    switch (create_one(key, value, end, created)) {
      case Result::kOk:
        return true;
      case Result::kFailed:
        return false;
      case Result::kLeaseGone:
        lease_ = 0;
        break;
    }
  }
  // A new lease: restore() claims it with the others (whether it got it is
  // for the caller to read back: the key's lease is ours or not).
  if (!restore(end)) return false;
  *created = true;
  return true;
}

bool EtcdStore::remove(const std::string& key) {
  if (key.empty()) return fail(kDelete, "empty key");
  prefetched_.written(key);
  published_.erase(key);
  created_.erase(key);
  HttpResponse r;
  if (!request(kDelete, etcd::delete_request(key), deadline(), &r)) return false;
  std::string why;
  if (etcd::read_delete(r.status, r.body, &why) != etcd::Outcome::kOk) return fail(kDelete, why);
  return true;
}

}  // namespace xpu_timer::supervisor
