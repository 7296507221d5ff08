// EtcdStore against a real etcd (Debian's etcd-server, /usr/bin/etcd) started
// on free loopback ports in a temporary data dir: round trips, two clients,
// a lease that lapses, and etcd stopped, killed and restarted. Every wait is
// for an event (an answer, a key that appears or vanishes), bounded by a
// deadline. Skipped, with the reason, where etcd is not installed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/etcd_store.h"
#include "tests/harness/child_process.h"
#include "tests/harness/etcd_server.h"

namespace xpu_timer::supervisor {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;
using xpu_timer::testing::Child;
using xpu_timer::testing::EtcdServer;
using xpu_timer::testing::wait_threads_state;
using xpu_timer::testing::wait_until;

std::unique_ptr<EtcdStore> client(int port, int ttl_s = 10, milliseconds timeout = seconds(5)) {
  return std::make_unique<EtcdStore>(StoreEndpoint{"127.0.0.1", port}, ttl_s, timeout);
}

// The keys under `prefix` (changed at or after `min_mod_revision`, with
// one) as one string "k=v k=v", or "error: ..." .
std::string listing(CoordinationStore& store, const std::string& prefix,
                    int64_t min_mod_revision = 0) {
  std::vector<KeyValue> kvs;
  if (!store.get_prefix(prefix, &kvs, nullptr, min_mod_revision)) return "error: " + store.error();
  std::string out;
  for (const KeyValue& kv : kvs) out += (out.empty() ? "" : " ") + kv.key + "=" + kv.value;
  return out;
}

class EtcdStoreProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (EtcdServer::binary().empty()) GTEST_SKIP() << EtcdServer::kEtcdMissing;
    char tmpl[] = "/tmp/xpu-etcd-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    server_ = std::make_unique<EtcdServer>(dir_);
    ASSERT_TRUE(start_etcd(dir_ + "/data"));
  }
  void TearDown() override {
    server_.reset();
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  bool start_etcd(const std::string& data_dir) {
    if (!server_->start(data_dir)) return false;
    etcd_ = &server_->child();
    client_port_ = server_->client_port();
    return true;
  }

  std::string dir_;
  std::unique_ptr<EtcdServer> server_;
  Child* etcd_ = nullptr;
  int client_port_ = 0;
};

TEST_F(EtcdStoreProcessTest, PutGetPrefixAndRemoveRoundTrip) {
  std::unique_ptr<EtcdStore> store = client(client_port_);
  ASSERT_TRUE(store->put("job/node-1", "step 10")) << store->error();
  ASSERT_TRUE(store->put("job/node-0", "step 12")) << store->error();
  ASSERT_TRUE(store->put("jobs/other", "not under job/")) << store->error();
  ASSERT_TRUE(store->put("job", "not under job/ either")) << store->error();
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  ASSERT_TRUE(store->put("job/bytes\xff", bytes)) << store->error();

  std::vector<KeyValue> kvs;
  int64_t revision = 0;
  ASSERT_TRUE(store->get_prefix("job/", &kvs, &revision)) << store->error();
  ASSERT_EQ(kvs.size(), 3u);
  EXPECT_EQ(kvs[0].key, "job/bytes\xff");
  EXPECT_EQ(kvs[0].value, bytes);
  EXPECT_EQ(kvs[1].key, "job/node-0");
  EXPECT_EQ(kvs[1].value, "step 12");
  EXPECT_EQ(kvs[2].key, "job/node-1");
  EXPECT_EQ(kvs[2].value, "step 10");
  EXPECT_GE(revision, kvs[0].mod_revision);
  const int64_t first_revision = kvs[2].mod_revision;

  // An overwrite changes the value and the key's revision; an empty value stays empty.
  ASSERT_TRUE(store->put("job/node-1", "step 11")) << store->error();
  ASSERT_TRUE(store->put("job/node-0", "")) << store->error();
  ASSERT_TRUE(store->get_prefix("job/node-", &kvs, nullptr)) << store->error();
  ASSERT_EQ(kvs.size(), 2u);
  EXPECT_EQ(kvs[0].value, "");
  EXPECT_EQ(kvs[1].value, "step 11");
  EXPECT_GT(kvs[1].mod_revision, first_revision);

  ASSERT_TRUE(store->remove("job/node-1")) << store->error();
  ASSERT_TRUE(store->remove("job/never-there")) << store->error();
  EXPECT_EQ(listing(*store, "job/node-"), "job/node-0=");
  EXPECT_EQ(listing(*store, "jobs/"), "jobs/other=not under job/");
  EXPECT_EQ(listing(*store, "nothing/"), "");
  EXPECT_EQ(store->lease_grants(), 1);

  // The store opened from its URL works the same.
  std::string error;
  std::unique_ptr<CoordinationStore> opened =
      open_coordination_store("etcd://127.0.0.1:" + std::to_string(client_port_), 10, &error);
  ASSERT_NE(opened, nullptr) << error;
  EXPECT_EQ(listing(*opened, "job/node-"), "job/node-0=");
}

TEST_F(EtcdStoreProcessTest, TwoClientsSeeEachOthersKeys) {
  std::unique_ptr<EtcdStore> node0 = client(client_port_);
  // A name, not an address: resolved (localhost may give ::1 first, which
  // refuses; the client goes on to 127.0.0.1).
  std::string error;
  std::unique_ptr<CoordinationStore> node1 =
      open_coordination_store("etcd://localhost:" + std::to_string(client_port_), 10, &error);
  ASSERT_NE(node1, nullptr) << error;
  ASSERT_TRUE(node0->put("job/progress/0", "comm 7 seq 41")) << node0->error();
  ASSERT_TRUE(node1->put("job/progress/1", "comm 7 seq 40")) << node1->error();
  EXPECT_EQ(listing(*node0, "job/progress/"),
            "job/progress/0=comm 7 seq 41 job/progress/1=comm 7 seq 40");
  EXPECT_EQ(listing(*node1, "job/progress/"),
            "job/progress/0=comm 7 seq 41 job/progress/1=comm 7 seq 40");
  ASSERT_TRUE(node1->remove("job/progress/1")) << node1->error();
  EXPECT_EQ(listing(*node0, "job/progress/"), "job/progress/0=comm 7 seq 41");
}

// What a reader that keeps what it read asks: only what changed since.
TEST_F(EtcdStoreProcessTest, AReadFromARevisionGetsOnlyTheKeysChangedSince) {
  std::unique_ptr<EtcdStore> writer = client(client_port_);
  std::unique_ptr<EtcdStore> reader = client(client_port_);
  ASSERT_TRUE(writer->put("job/a", "1")) << writer->error();
  ASSERT_TRUE(writer->put("job/b", "2")) << writer->error();
  ASSERT_TRUE(writer->put("job/c", "3")) << writer->error();
  std::vector<KeyValue> kvs;
  int64_t read_at = 0;
  ASSERT_TRUE(reader->get_prefix("job/", &kvs, &read_at)) << reader->error();
  ASSERT_EQ(kvs.size(), 3u);

  // Changed, added, deleted, and a key outside the prefix.
  ASSERT_TRUE(writer->put("job/b", "22")) << writer->error();
  ASSERT_TRUE(writer->put("job/d", "4")) << writer->error();
  ASSERT_TRUE(writer->remove("job/c")) << writer->error();
  ASSERT_TRUE(writer->put("jobs/x", "5")) << writer->error();
  int64_t read_again = 0;
  int64_t count = 0;
  ASSERT_TRUE(reader->get_prefix("job/", &kvs, &read_again, read_at + 1, &count))
      << reader->error();
  ASSERT_EQ(kvs.size(), 2u);  // not a, not the deleted c
  // etcd counts the whole range (a, b, d): a reader that held a, b, c and
  // got b, d knows that one of its keys is gone (prefix_copy.h).
  EXPECT_EQ(count, 3);
  EXPECT_EQ(kvs[0].key, "job/b");
  EXPECT_EQ(kvs[0].value, "22");
  EXPECT_GT(kvs[0].mod_revision, read_at);
  EXPECT_EQ(kvs[1].key, "job/d");
  EXPECT_EQ(read_again, read_at + 4);  // one revision per change

  // Nothing since: nothing, at the same revision; 0 is everything.
  int64_t nothing_at = 0;
  ASSERT_TRUE(reader->get_prefix("job/", &kvs, &nothing_at, read_again + 1, &count))
      << reader->error();
  EXPECT_TRUE(kvs.empty());
  EXPECT_EQ(nothing_at, read_again);
  EXPECT_EQ(count, 3);
  ASSERT_TRUE(reader->get_prefix("nothing/", &kvs, nullptr, 0, &count)) << reader->error();
  EXPECT_EQ(count, 0);
  EXPECT_EQ(listing(*reader, "job/", 0), "job/a=1 job/b=22 job/d=4");
  // The bound is inclusive: from b's own revision, b is in.
  EXPECT_EQ(listing(*reader, "job/", read_at + 1), "job/b=22 job/d=4");
  EXPECT_EQ(listing(*reader, "job/", read_at + 2), "job/d=4");
}

// Several prefixes read in one request (a transaction of ranges): each
// answer is what get_prefix would have read then, taken once, and not after
// this client wrote under its prefix.
TEST_F(EtcdStoreProcessTest, APrefetchAnswersTheReadsThatFollowOnceAndNotAfterAWrite) {
  std::unique_ptr<EtcdStore> writer = client(client_port_);
  std::unique_ptr<EtcdStore> reader = client(client_port_);
  ASSERT_TRUE(writer->put("job/alarms/1", "a")) << writer->error();
  ASSERT_TRUE(writer->put("job/dumps/1", "d")) << writer->error();
  std::vector<KeyValue> kvs;
  int64_t at = 0;
  ASSERT_TRUE(reader->get_prefix("job/", &kvs, &at)) << reader->error();
  ASSERT_TRUE(writer->put("job/alarms/2", "b")) << writer->error();

  ASSERT_TRUE(reader->prefetch({{"job/alarms/", at + 1}, {"job/dumps/", 0}, {"job/none/", 0}}))
      << reader->error();
  // A change after the prefetch: the prefetched answer is of before it.
  ASSERT_TRUE(writer->put("job/alarms/3", "c")) << writer->error();
  int64_t revision = 0, count = 0;
  ASSERT_TRUE(reader->get_prefix("job/alarms/", &kvs, &revision, at + 1, &count));
  ASSERT_EQ(kvs.size(), 1u);
  EXPECT_EQ(kvs[0].key, "job/alarms/2");
  EXPECT_EQ(count, 2);
  EXPECT_EQ(revision, at + 1);
  EXPECT_EQ(reader->prefetched_reads(), 1u);
  // Once: the same read again asks etcd, and sees the change.
  ASSERT_TRUE(reader->get_prefix("job/alarms/", &kvs, &revision, at + 1, &count));
  EXPECT_EQ(kvs.size(), 2u);
  EXPECT_EQ(count, 3);
  EXPECT_EQ(reader->prefetched_reads(), 1u);
  // This client writes under a prefetched prefix: its read shows its write.
  ASSERT_TRUE(reader->put("job/dumps/2", "mine")) << reader->error();
  EXPECT_EQ(listing(*reader, "job/dumps/", 0), "job/dumps/1=d job/dumps/2=mine");
  EXPECT_EQ(reader->prefetched_reads(), 1u);
  // An empty range is an answer too.
  ASSERT_TRUE(reader->get_prefix("job/none/", &kvs, nullptr, 0, &count));
  EXPECT_TRUE(kvs.empty());
  EXPECT_EQ(count, 0);
  EXPECT_EQ(reader->prefetched_reads(), 2u);
}

TEST_F(EtcdStoreProcessTest, ALapsedLeaseLosesItsKeysAndTheNextCallRestoresThem) {
  // `kept` is granted first and refreshed; `lapsing` is granted after it with
  // the same TTL and never refreshed. So when `lapsing`'s key is gone,
  // `kept`'s lease would be gone too, had keep_alive() not refreshed it.
  // Long enough that keep_alive() refreshes `kept` in time on a loaded
  // machine (each loop calls it once, then reads).
  const int ttl_s = 6;
  std::unique_ptr<EtcdStore> kept = client(client_port_, ttl_s);
  std::unique_ptr<EtcdStore> lapsing = client(client_port_, ttl_s);
  std::unique_ptr<EtcdStore> observer = client(client_port_);
  ASSERT_TRUE(kept->put("job/kept", "1")) << kept->error();
  ASSERT_TRUE(lapsing->put("job/lapsing", "2")) << lapsing->error();
  EXPECT_EQ(listing(*observer, "job/"), "job/kept=1 job/lapsing=2");
  // Waits, refreshing `kept`, until the observer reads exactly `expected`.
  std::string last;
  const auto refresh_until = [&](const std::string& expected) {
    return wait_until(
        [&] {
          if (!kept->keep_alive()) ADD_FAILURE() << kept->error();
          last = listing(*observer, "job/");
          return last == expected;
        },
        seconds(30));
  };
  ASSERT_TRUE(refresh_until("job/kept=1")) << "the unrefreshed lease never expired: " << last;
  EXPECT_EQ(kept->lease_grants(), 1) << "keep_alive() did not keep the lease";

  // keep_alive() finds the lease gone: a new one, and the key is back.
  const int64_t old_lease = lapsing->lease_id();
  ASSERT_TRUE(lapsing->keep_alive()) << lapsing->error();
  EXPECT_NE(lapsing->lease_id(), old_lease);
  EXPECT_EQ(lapsing->lease_grants(), 2);
  EXPECT_EQ(listing(*observer, "job/"), "job/kept=1 job/lapsing=2");

  // The same found by a put: after the lapse, the put re-grants and writes both keys.
  ASSERT_TRUE(refresh_until("job/kept=1")) << "the second lease never expired: " << last;
  ASSERT_TRUE(lapsing->put("job/lapsing-too", "3")) << lapsing->error();
  EXPECT_EQ(lapsing->lease_grants(), 3);
  EXPECT_EQ(listing(*observer, "job/"), "job/kept=1 job/lapsing=2 job/lapsing-too=3");
  EXPECT_EQ(kept->lease_grants(), 1);
}

TEST_F(EtcdStoreProcessTest, AStoppedOrKilledEtcdFailsWithinTheDeadlineAndARestartRecovers) {
  const milliseconds timeout(1000);
  std::unique_ptr<EtcdStore> store = client(client_port_, 30, timeout);
  ASSERT_TRUE(store->put("job/node-0", "alive")) << store->error();
  const std::string at = "etcd 127.0.0.1:" + std::to_string(client_port_) + ": ";

  // Stopped: connections are taken by the kernel, nothing answers.
  ASSERT_TRUE(etcd_->signal(SIGSTOP));
  // kill() returns before every thread has stopped: wait until they have.
  ASSERT_TRUE(wait_threads_state(etcd_->pid(), "T", seconds(10)))
      << "etcd's threads: " << xpu_timer::testing::thread_states(etcd_->pid());
  auto start = Clock::now();
  EXPECT_FALSE(store->keep_alive());
  auto took = Clock::now() - start;
  EXPECT_EQ(store->error(),
            at + "/v3/lease/keepalive: timed out waiting for the answer (call timeout 1000 ms)");
  EXPECT_GE(took, timeout);
  EXPECT_LT(took, timeout + milliseconds(3000));  // scheduling slack on a loaded machine
  ASSERT_TRUE(etcd_->signal(SIGCONT));

  // Killed: refused at once.
  etcd_->kill_group();
  start = Clock::now();
  EXPECT_FALSE(store->put("job/node-0", "still alive"));
  EXPECT_EQ(store->error(), at + "/v3/kv/put: cannot connect: Connection refused");
  std::vector<KeyValue> kvs;
  EXPECT_FALSE(store->get_prefix("job/", &kvs, nullptr));
  EXPECT_EQ(store->error(), at + "/v3/kv/range: cannot connect: Connection refused");
  EXPECT_LT(Clock::now() - start, timeout);

  // Restarted on the same data dir and ports: the same client goes on.
  const int port = client_port_;
  ASSERT_TRUE(start_etcd(dir_ + "/data"));
  ASSERT_EQ(client_port_, port) << "etcd had to move to other ports";
  ASSERT_TRUE(store->keep_alive()) << store->error();
  ASSERT_TRUE(store->put("job/node-0", "back")) << store->error();
  EXPECT_EQ(listing(*client(client_port_), "job/"), "job/node-0=back");
  EXPECT_EQ(store->error(), at + "/v3/kv/range: cannot connect: Connection refused")
      << "error() keeps the last failure";
}

TEST_F(EtcdStoreProcessTest, AnEtcdThatLostItsDataGetsTheKeysBack) {
  std::unique_ptr<EtcdStore> store = client(client_port_, 30);
  ASSERT_TRUE(store->put("job/node-0", "a")) << store->error();
  ASSERT_TRUE(store->put("job/node-1", "b")) << store->error();
  const int64_t lease = store->lease_id();

  // Restarted empty on the same ports: the lease is unknown to it.
  etcd_->kill_group();
  const int port = client_port_;
  ASSERT_TRUE(start_etcd(dir_ + "/fresh"));
  ASSERT_EQ(client_port_, port) << "etcd had to move to other ports";
  EXPECT_EQ(listing(*client(client_port_), "job/"), "");
  ASSERT_TRUE(store->keep_alive()) << store->error();
  EXPECT_NE(store->lease_id(), lease);
  EXPECT_EQ(store->lease_grants(), 2);
  EXPECT_EQ(listing(*client(client_port_), "job/"), "job/node-0=a job/node-1=b");
}

}  // namespace
}  // namespace xpu_timer::supervisor
