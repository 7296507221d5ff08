// The store through which the supervisors of one job share what their ranks
// are doing (one per node; each publishes its own ranks' progress and reads
// the other nodes'). The cluster already runs one; etcd is the one supported
// (etcd_store.h). Keys a client puts are bound to that client's lease: when
// the supervisor dies, its keys disappear with the lease, so a node that is
// gone is seen as gone.
//
// Every call is bounded by the store's call timeout, never throws, and on
// failure returns false and leaves one line in error(); the store stays
// usable and the next call tries again. Not synchronised: one owner thread,
// which may block for up to the call timeout in each call (keep the calls off
// the asio thread's poll loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xpu_timer::supervisor {

struct KeyValue {
  std::string key;
  std::string value;
  int64_t mod_revision = 0;  // the store's revision of the key's last change
  int64_t lease = 0;         // the lease the key is bound to (0: none): who wrote it
};

// One get_prefix read, named ahead for prefetch().
struct PrefixQuery {
  std::string prefix;
  int64_t min_mod_revision = 0;
};

class CoordinationStore {
 public:
  virtual ~CoordinationStore();

  // Sets `key` to `value` under this client's lease (granted on first use).
  // The store remembers what it put: when the lease is found gone (it
  // expired, or the store lost its data) a new one is granted and every key
  // put and not removed is written again, in this call or keep_alive().
  virtual bool put(const std::string& key, const std::string& value) = 0;
  // Every key starting with `prefix` ("" for all), in key order, and the
  // store's revision at the time of the read (`revision` may be null). With
  // `min_mod_revision` > 0, only the keys changed at or after that revision:
  // a reader that keeps what it read gets only what changed since, by asking
  // from the revision of its last read + 1. Keys deleted since do not show;
  // a revision lower than one seen before means the store lost its history
  // (read everything again). `count` (may be null) gets how many keys the
  // whole range holds, those not sent included: a reader of the changes
  // that holds more keys than that knows some were deleted.
  virtual bool get_prefix(const std::string& prefix, std::vector<KeyValue>* out, int64_t* revision,
                          int64_t min_mod_revision = 0, int64_t* count = nullptr) = 0;
  // Reads `queries` at once (etcd: one transaction of ranges, one request
  // instead of one each) and keeps the answers for the get_prefix calls with
  // the same arguments that follow, within the same round
  // (prefetched_ranges.h: each answered once, and not after this client
  // wrote under that prefix). False when the read failed: nothing is kept,
  // the reads ask the store themselves. The default (a store without
  // transactions) keeps nothing.
  virtual bool prefetch(const std::vector<PrefixQuery>& queries);
  // Sets `key` to `value` under this client's lease only if no one holds the
  // key (one writer per key); `created` says whether it was. Remembered like
  // put(): a new lease claims it again the same way. The default (a store
  // without transactions) is put() and `created` true.
  virtual bool create(const std::string& key, const std::string& value, bool* created);
  // The lease this client's keys are bound to now (KeyValue::lease of what
  // it put); 0 before the first grant, and for a store without leases.
  virtual int64_t lease() const;
  // Deletes `key` (true also when it did not exist) and forgets it.
  virtual bool remove(const std::string& key) = 0;
  // Refreshes the lease; to be called well within its TTL (a third of it).
  virtual bool keep_alive() = 0;
  // The TTL of the lease in seconds; 0 for a store without leases (its user
  // then calls keep_alive() whenever it likes).
  virtual int lease_ttl_s() const;
  // Why the last failed call failed, naming the store ("etcd 10.0.0.5:2379: ...").
  virtual const std::string& error() const = 0;
};

struct StoreEndpoint {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  int port = 0;
  bool tls = false;  // https:// or etcds://
};

// How the client proves who it is and checks the server, as etcd
// deployments ask: a user and password (etcd's auth: a token from
// /v3/auth/authenticate sent with every request, renewed when etcd refuses
// it), and for TLS the CA that signed the server's certificate and the
// client's own certificate and key (etcd --client-cert-auth).
struct StoreSecurity {
  std::string user;
  std::string password;       // or read from password_file when empty
  std::string password_file;  // its first line
  std::string ca_file;        // "" for the system's CAs
  std::string cert_file;
  std::string key_file;
};

// Parses "etcd://HOST:PORT", or "https://HOST:PORT" / "etcds://HOST:PORT"
// for TLS (HOST a name, an IPv4 address or [IPv6]). False with one line
// naming the URL, what is expected and what is wrong otherwise.
bool parse_store_url(const std::string& url, StoreEndpoint* out, std::string* error);
// Checks `security` against the URL's scheme (certificate files without TLS,
// a certificate without its key, a password without a user, a password file
// that cannot be read); false with one line.
bool check_store_security(const StoreEndpoint& endpoint, const StoreSecurity& security,
                          std::string* error);

constexpr std::chrono::milliseconds kDefaultStoreCallTimeout{2000};

// The store named by `url`. Only parses the URL and checks the arguments;
// the store is first contacted by the first call. Null with one line in
// `error` for a URL or argument that cannot work.
// With TLS, the certificate files are loaded here; a password file is read
// here too.
std::unique_ptr<CoordinationStore> open_coordination_store(
    const std::string& url, int lease_ttl_s, std::string* error,
    std::chrono::milliseconds call_timeout = kDefaultStoreCallTimeout,
    const StoreSecurity& security = {});

}  // namespace xpu_timer::supervisor
