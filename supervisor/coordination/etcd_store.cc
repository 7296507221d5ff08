#include "supervisor/coordination/etcd_store.h"

#include "supervisor/coordination/etcd_messages.h"

namespace xpu_timer::supervisor {

namespace {
constexpr char kGrant[] = "/v3/lease/grant";
constexpr char kKeepAlive[] = "/v3/lease/keepalive";
constexpr char kPut[] = "/v3/kv/put";
constexpr char kRange[] = "/v3/kv/range";
constexpr char kDelete[] = "/v3/kv/deleterange";
}  // namespace

EtcdStore::EtcdStore(const StoreEndpoint& endpoint, int lease_ttl_s,
                     std::chrono::milliseconds call_timeout)
    : http_(endpoint.host, endpoint.port),
      name_("etcd " +
            (endpoint.host.find(':') != std::string::npos ? "[" + endpoint.host + "]"
                                                          : endpoint.host) +
            ":" + std::to_string(endpoint.port)),
      lease_ttl_s_(lease_ttl_s),
      call_timeout_(call_timeout) {}

bool EtcdStore::fail(const char* path, const std::string& why) {
  error_ = name_ + ": " + path + ": " + why;
  return false;
}

bool EtcdStore::request(const char* path, const std::string& body, Deadline deadline,
                        HttpResponse* response) {
  std::string why;
  if (http_.post(path, body, deadline, response, &why)) return true;
  if (why.rfind("timed out", 0) == 0) {
    why += " (call timeout " + std::to_string(call_timeout_.count()) + " ms)";
  }
  return fail(path, why);
}

EtcdStore::Result EtcdStore::put_one(const std::string& key, const std::string& value,
                                     Deadline deadline) {
  HttpResponse r;
  if (!request(kPut, etcd::put_request(key, value, lease_), deadline, &r)) return Result::kFailed;
  std::string why;
  switch (etcd::read_put(r.status, r.body, &why)) {
    case etcd::Outcome::kOk:
      return Result::kOk;
    case etcd::Outcome::kLeaseNotFound:
      return Result::kLeaseGone;
    case etcd::Outcome::kFailed:
      break;
  }
  fail(kPut, why);
  return Result::kFailed;
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
    switch (put_one(key, value, deadline)) {
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
                           int64_t min_mod_revision) {
  out->clear();
  HttpResponse r;
  if (!request(kRange, etcd::range_prefix_request(prefix, min_mod_revision), deadline(), &r)) {
    return false;
  }
  std::string why;
  if (etcd::read_range(r.status, r.body, out, revision, &why) != etcd::Outcome::kOk) {
    return fail(kRange, why);
  }
  return true;
}

bool EtcdStore::remove(const std::string& key) {
  if (key.empty()) return fail(kDelete, "empty key");
  published_.erase(key);
  HttpResponse r;
  if (!request(kDelete, etcd::delete_request(key), deadline(), &r)) return false;
  std::string why;
  if (etcd::read_delete(r.status, r.body, &why) != etcd::Outcome::kOk) return fail(kDelete, why);
  return true;
}

}  // namespace xpu_timer::supervisor
