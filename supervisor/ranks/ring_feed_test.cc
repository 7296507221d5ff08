#include "supervisor/ranks/ring_feed.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

namespace xpu_timer::supervisor {
namespace {

using recorder::OpState;
using recorder::RecordData;

struct Ring {
  std::string dir;
  recorder::RingWriter writer;
  RankRecord record;

  explicit Ring(uint32_t capacity) {
    char tmpl[] = "/tmp/ring_feed_test.XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) dir = tmpl;
    RankIdentity id;
    id.rank = 3;
    if (!writer.create(dir.c_str(), id, ::getpid(), capacity)) return;
    std::string error;
    record.reg.rank = 3;
    record.reg.pid = ::getpid();
    record.ring = recorder::RingReader::attach(writer.path(), ::getpid(), 3, &error);
  }
  ~Ring() {
    writer.unlink_file();
    ::rmdir(dir.c_str());
  }
};

// The writer's side of a ring's records, through a mapping of our own: a
// version word set odd is a write in progress (a torn position).
struct WriterSide {
  explicit WriterSide(const Ring& ring, uint32_t capacity)
      : bytes(recorder::ring_file_bytes(capacity)) {
    const int fd = ::open(ring.writer.path(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return;
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m != MAP_FAILED) map = m;
  }
  ~WriterSide() {
    if (map != nullptr) ::munmap(map, bytes);
  }
  std::atomic<uint64_t>& version(uint64_t pos, uint32_t capacity) {
    auto* records =
        reinterpret_cast<recorder::Record*>(static_cast<char*>(map) + sizeof(recorder::RingHeader));
    return records[pos % capacity].version;
  }
  size_t bytes;
  void* map = nullptr;
};

RecordData op(uint64_t seq, OpState state, uint64_t launch_ns = 1) {
  RecordData d;
  d.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  d.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  d.state = static_cast<uint8_t>(state);
  d.seq = seq;
  d.launch_ns = launch_ns;
  return d;
}

// What a consumer was handed, by seq, and in which order the consumers were
// called (`calls`, shared).
struct Seen : RingConsumer {
  Seen(int id, std::vector<int>* calls) : id(id), calls(calls) {}
  void on_ring_read(const RingRead& read) override {
    EXPECT_EQ(read.rank, 3);
    EXPECT_EQ(read.pid, ::getpid());
    EXPECT_EQ(read.ring->rank, 3);
    calls->push_back(id);
    last_fresh.clear();
    last_final.clear();
    for (const RecordData& d : *read.fresh) last_fresh.push_back(d.seq);
    for (const RecordData& d : *read.final) last_final.push_back(d.seq);
    fresh.insert(fresh.end(), last_fresh.begin(), last_fresh.end());
    final.insert(final.end(), last_final.begin(), last_final.end());
  }
  // Takes what was handed over since the last take.
  std::vector<uint64_t> take_final() { return std::exchange(final, {}); }
  std::vector<uint64_t> take_fresh() { return std::exchange(fresh, {}); }
  int id;
  std::vector<int>* calls;
  std::vector<uint64_t> fresh, final;            // since the last take
  std::vector<uint64_t> last_fresh, last_final;  // of the last call
};

struct Feed {
  Feed() {
    feed.add_consumer(&a);
    feed.add_consumer(&b);
  }
  // One read; the final records handed to the first consumer (the second
  // must have been handed the same).
  std::vector<uint64_t> read(const Ring& ring, uint64_t now_ns = 2) {
    feed.read({ring.record}, now_ns);
    EXPECT_EQ(calls, (std::vector<int>{0, 1}));  // both, once each, in order
    calls.clear();
    EXPECT_EQ(a.last_fresh, b.last_fresh);
    EXPECT_EQ(a.last_final, b.last_final);
    return a.take_final();
  }
  std::vector<int> calls;
  Seen a{0, &calls}, b{1, &calls};
  RingFeed feed;
};

TEST(RingFeed, HandsEachRecordOverFreshOnceAndFinalOnce) {
  Ring ring(16);
  ASSERT_NE(ring.record.ring, nullptr);
  Feed f;
  const uint64_t p1 = ring.writer.append(op(1, OpState::kIssued));
  ring.writer.append(op(2, OpState::kCompleted));
  ring.writer.append(op(3, OpState::kUntimed));
  EXPECT_EQ(f.read(ring), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(f.a.take_fresh(), (std::vector<uint64_t>{1, 2, 3}));  // #1 as issued
  EXPECT_EQ(f.read(ring), std::vector<uint64_t>{});               // nothing new
  EXPECT_EQ(f.a.take_fresh(), std::vector<uint64_t>{});
  ring.writer.update(p1, op(1, OpState::kRunning));
  EXPECT_EQ(f.read(ring), std::vector<uint64_t>{});
  ring.writer.update(p1, op(1, OpState::kCompleted));
  ring.writer.append(op(4, OpState::kFailed));
  RecordData range;  // a host range: appended final
  range.kind = static_cast<uint8_t>(proto::OpKind::kRange);
  range.seq = 5;
  ring.writer.append(range);
  EXPECT_EQ(f.read(ring), (std::vector<uint64_t>{1, 4, 5}));
  EXPECT_EQ(f.a.take_fresh(), (std::vector<uint64_t>{4, 5}));
  EXPECT_EQ(f.read(ring), std::vector<uint64_t>{});
  EXPECT_TRUE(f.feed.follows(3, ::getpid()));
  EXPECT_FALSE(f.feed.follows(3, ::getpid() + 1));  // another process of that rank
}

TEST(RingFeed, PassesOverAnOperationUnfinishedForLong) {
  Ring ring(16);
  ASSERT_NE(ring.record.ring, nullptr);
  Feed f;
  const uint64_t stuck = ring.writer.append(op(1, OpState::kRunning, 1000));
  ring.writer.append(op(2, OpState::kCompleted));
  EXPECT_EQ(f.read(ring, 2000), std::vector<uint64_t>{2});
  ring.writer.append(op(3, OpState::kCompleted));
  EXPECT_EQ(f.read(ring, 2000), std::vector<uint64_t>{3});
  EXPECT_EQ(f.feed.reread(), 1u);  // the second record, read again behind the first
  // Past the give-up time the cursor moves beyond it: nothing is reread.
  const uint64_t late = 1000 + RingFeed::kGiveUpNs;
  EXPECT_EQ(f.read(ring, late), std::vector<uint64_t>{});
  ring.writer.update(stuck, op(1, OpState::kCompleted, 1000));
  ring.writer.append(op(4, OpState::kCompleted));
  EXPECT_EQ(f.read(ring, late), std::vector<uint64_t>{4});
  EXPECT_EQ(f.feed.reread(), 0u);
  EXPECT_EQ(f.a.take_fresh(), (std::vector<uint64_t>{1, 2, 3, 4}));
}

// The supervisor's clock is CLOCK_MONOTONIC, the machine's uptime: far above
// every give-up time. An operation launched a moment ago is waited for,
// and a position torn a moment ago retried, as on a clock near 0 (a stamp
// left at 0 would make both look older than kGiveUpNs at once).
TEST(RingFeed, OnAnUptimeClockWhatIsRecentIsWaitedFor) {
  constexpr uint64_t kUptime = 100000ull * 1000 * 1000 * 1000;  // 100,000 s
  static_assert(kUptime > 10 * RingFeed::kGiveUpNs);
  constexpr uint64_t kMs = 1000 * 1000;
  Ring ring(16);
  ASSERT_NE(ring.record.ring, nullptr);
  Feed f;
  const uint64_t running = ring.writer.append(op(1, OpState::kRunning, kUptime - kMs));
  ring.writer.append(op(2, OpState::kCompleted, kUptime - kMs));
  EXPECT_EQ(f.read(ring, kUptime), std::vector<uint64_t>{2});
  EXPECT_EQ(f.read(ring, kUptime + 5 * kMs), std::vector<uint64_t>{});
  EXPECT_EQ(f.feed.reread(), 1u);  // still behind the one in flight
  ring.writer.update(running, op(1, OpState::kCompleted, kUptime - kMs));
  EXPECT_EQ(f.read(ring, kUptime + 10 * kMs), std::vector<uint64_t>{1});
  // A torn position on that clock: retried until whole.
  WriterSide side(ring, 16);
  ASSERT_NE(side.map, nullptr);
  std::atomic<uint64_t>& v = side.version(ring.writer.append(op(3, OpState::kCompleted)), 16);
  const uint64_t stable = v.load();
  v.store(stable + 1);
  EXPECT_EQ(f.read(ring, kUptime + 15 * kMs), std::vector<uint64_t>{});
  EXPECT_EQ(f.read(ring, kUptime + 20 * kMs), std::vector<uint64_t>{});
  v.store(stable + 2);
  EXPECT_EQ(f.read(ring, kUptime + 25 * kMs), std::vector<uint64_t>{3});
  EXPECT_EQ(f.feed.records_lost(), 0u);
}

TEST(RingFeed, ALapOfTheRingLosesWhatWasOverwrittenOnly) {
  Ring ring(16);
  ASSERT_NE(ring.record.ring, nullptr);
  Feed f;
  ring.writer.append(op(1, OpState::kIssued));  // never completes: overwritten
  for (uint64_t s = 2; s <= 40; ++s) ring.writer.append(op(s, OpState::kCompleted));
  const std::vector<uint64_t> got = f.read(ring);
  ASSERT_EQ(got.size(), 16u);  // the window: positions 24..39
  EXPECT_EQ(got.front(), 25u);
  EXPECT_EQ(got.back(), 40u);
  EXPECT_EQ(f.a.take_fresh(), got);
  EXPECT_EQ(f.feed.records_lost(), 24u);
  EXPECT_EQ(f.read(ring), std::vector<uint64_t>{});
}

// Reads interleaved with writes over several laps: every record is handed
// over fresh exactly once, in ring order, and final exactly once, an
// operation in flight only once it completed, though later ones were final
// before it.
TEST(RingFeed, EveryRecordOnceAcrossLapsWithOneHeldBackUntilFinal) {
  Ring ring(16);
  ASSERT_NE(ring.record.ring, nullptr);
  Feed f;
  std::vector<uint64_t> fresh, final;
  uint64_t in_flight = UINT64_MAX, in_flight_seq = 0;
  for (uint64_t s = 1; s <= 100; ++s) {
    if (s % 10 == 1) {  // one in flight at a time, completed 7 appends later
      in_flight = ring.writer.append(op(s, OpState::kIssued));
      in_flight_seq = s;
    } else {
      ring.writer.append(op(s, OpState::kCompleted));
    }
    if (s % 10 == 8) ring.writer.update(in_flight, op(in_flight_seq, OpState::kCompleted));
    if (s % 5 == 0) {  // a read every 5 appends: well within a lap
      for (uint64_t x : f.read(ring)) final.push_back(x);
      for (uint64_t x : f.a.take_fresh()) fresh.push_back(x);
    }
  }
  std::vector<uint64_t> all;
  for (uint64_t s = 1; s <= 100; ++s) all.push_back(s);
  EXPECT_EQ(fresh, all);
  std::vector<uint64_t> sorted = final;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, all);
  // #11 completed after #12..#15 were read final: it comes after them.
  const auto at = [&](uint64_t s) {
    return std::find(final.begin(), final.end(), s) - final.begin();
  };
  EXPECT_GT(at(11), at(15));
  EXPECT_EQ(f.feed.records_lost(), 0u);
}

// A position whose write is in progress (odd version) is skipped, then read
// again: handed over once it is whole, fresh and final, in its place, however
// many reads it stays torn, unless for kGiveUpNs.
TEST(RingFeed, ATornPositionIsReadAgainAndHandedOverOnceWhole) {
  Ring ring(16);
  ASSERT_NE(ring.record.ring, nullptr);
  Feed f;
  for (uint64_t s = 1; s <= 3; ++s) ring.writer.append(op(s, OpState::kCompleted));
  WriterSide side(ring, 16);
  ASSERT_NE(side.map, nullptr);
  std::atomic<uint64_t>& version = side.version(1, 16);
  const uint64_t stable = version.load();
  version.store(stable + 1);  // a write in progress
  EXPECT_EQ(f.read(ring), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(f.a.take_fresh(), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(f.read(ring), std::vector<uint64_t>{});  // still torn
  version.store(stable + 2);                         // the write done
  EXPECT_EQ(f.read(ring), std::vector<uint64_t>{2});
  EXPECT_EQ(f.a.take_fresh(), std::vector<uint64_t>{2});
  EXPECT_EQ(f.read(ring), std::vector<uint64_t>{});
  // Torn over many reads (its writer preempted midway on a loaded machine,
  // read every 5 ms): read again each time, handed over once whole.
  constexpr uint64_t kMs = 1'000'000;
  uint64_t now = 2;
  std::atomic<uint64_t>& v4 = side.version(ring.writer.append(op(4, OpState::kCompleted)), 16);
  const uint64_t stable4 = v4.load();
  v4.store(stable4 + 1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(f.read(ring, now += 5 * kMs), std::vector<uint64_t>{});
  EXPECT_EQ(f.a.take_fresh(), std::vector<uint64_t>{});
  v4.store(stable4 + 2);
  EXPECT_EQ(f.read(ring, now += 5 * kMs), std::vector<uint64_t>{4});
  EXPECT_EQ(f.a.take_fresh(), std::vector<uint64_t>{4});
  EXPECT_EQ(f.feed.records_lost(), 0u);
  // Torn for kGiveUpNs (its writer died mid-write): passed over for good,
  // counted as lost once, and the records after it still handed over.
  std::atomic<uint64_t>& v5 = side.version(ring.writer.append(op(5, OpState::kCompleted)), 16);
  v5.store(v5.load() + 1);
  ring.writer.append(op(6, OpState::kCompleted));
  EXPECT_EQ(f.read(ring, now += 5 * kMs), std::vector<uint64_t>{6});
  EXPECT_EQ(f.a.take_fresh(), std::vector<uint64_t>{6});
  EXPECT_EQ(f.read(ring, now += RingFeed::kGiveUpNs - 10 * kMs), std::vector<uint64_t>{});
  EXPECT_EQ(f.feed.records_lost(), 0u);  // still waited for
  EXPECT_EQ(f.read(ring, now += 10 * kMs), std::vector<uint64_t>{});
  EXPECT_EQ(f.feed.records_lost(), 1u);
  EXPECT_EQ(f.read(ring, now += 5 * kMs), std::vector<uint64_t>{});
  EXPECT_EQ(f.feed.records_lost(), 1u);  // once
  ring.writer.append(op(7, OpState::kCompleted));
  EXPECT_EQ(f.read(ring, now += 5 * kMs), std::vector<uint64_t>{7});
  EXPECT_EQ(f.a.take_fresh(), std::vector<uint64_t>{7});
}

TEST(RingFeed, ReadsAgainBeforeTheFastestRingHasAQuarterRewritten) {
  Ring ring(16);
  ASSERT_NE(ring.record.ring, nullptr);
  Feed f;
  constexpr uint64_t kMs = 1'000'000;
  EXPECT_EQ(f.feed.next_read_delay_ns(5 * kMs, 500 * kMs), 500 * kMs);  // nothing read yet
  f.read(ring, 1000 * kMs);
  EXPECT_EQ(f.feed.next_read_delay_ns(5 * kMs, 500 * kMs), 20 * kMs);  // its rate unknown
  for (uint64_t s = 1; s <= 8; ++s) ring.writer.append(op(s, OpState::kCompleted));
  f.read(ring, 1100 * kMs);  // 80 records a second: a quarter (4) in 50 ms
  EXPECT_EQ(f.feed.next_read_delay_ns(5 * kMs, 500 * kMs), 50 * kMs);
}

}  // namespace
}  // namespace xpu_timer::supervisor
