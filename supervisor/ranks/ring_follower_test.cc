#include "supervisor/ranks/ring_follower.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
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
    char tmpl[] = "/tmp/ring_follower_test.XXXXXX";
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

RecordData op(uint64_t seq, OpState state, uint64_t launch_ns = 1) {
  RecordData d;
  d.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  d.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  d.state = static_cast<uint8_t>(state);
  d.seq = seq;
  d.launch_ns = launch_ns;
  return d;
}

std::vector<uint64_t> follow(RingFollower& f, const Ring& ring, uint64_t now_ns = 2) {
  std::vector<uint64_t> seqs;
  f.follow({ring.record}, now_ns, [&](int rank, const RecordData& d) {
    EXPECT_EQ(rank, 3);
    seqs.push_back(d.seq);
  });
  return seqs;
}

TEST(RingFollower, HandsEachRecordOverOnceWhenItIsFinal) {
  Ring ring(16);
  ASSERT_NE(ring.record.ring, nullptr);
  RingFollower f;
  const uint64_t p1 = ring.writer.append(op(1, OpState::kIssued));
  ring.writer.append(op(2, OpState::kCompleted));
  ring.writer.append(op(3, OpState::kUntimed));
  EXPECT_EQ(follow(f, ring), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(follow(f, ring), std::vector<uint64_t>{});  // nothing new
  ring.writer.update(p1, op(1, OpState::kRunning));
  EXPECT_EQ(follow(f, ring), std::vector<uint64_t>{});
  ring.writer.update(p1, op(1, OpState::kCompleted));
  ring.writer.append(op(4, OpState::kFailed));
  EXPECT_EQ(follow(f, ring), (std::vector<uint64_t>{1, 4}));
  EXPECT_EQ(follow(f, ring), std::vector<uint64_t>{});
}

TEST(RingFollower, PassesOverAnOperationUnfinishedForLong) {
  Ring ring(16);
  ASSERT_NE(ring.record.ring, nullptr);
  RingFollower f;
  const uint64_t stuck = ring.writer.append(op(1, OpState::kRunning, 1000));
  ring.writer.append(op(2, OpState::kCompleted));
  EXPECT_EQ(follow(f, ring, 2000), std::vector<uint64_t>{2});
  ring.writer.append(op(3, OpState::kCompleted));
  EXPECT_EQ(follow(f, ring, 2000), std::vector<uint64_t>{3});
  EXPECT_EQ(f.reread(), 1u);  // the second record, read again behind the first
  // Past the give-up time the cursor moves beyond it: nothing is reread.
  const uint64_t late = 1000 + RingFollower::kGiveUpNs;
  EXPECT_EQ(follow(f, ring, late), std::vector<uint64_t>{});
  ring.writer.update(stuck, op(1, OpState::kCompleted, 1000));
  ring.writer.append(op(4, OpState::kCompleted));
  EXPECT_EQ(follow(f, ring, late), std::vector<uint64_t>{4});
  EXPECT_EQ(f.reread(), 0u);
}

TEST(RingFollower, ALapOfTheRingLosesWhatWasOverwrittenOnly) {
  Ring ring(16);
  ASSERT_NE(ring.record.ring, nullptr);
  RingFollower f;
  ring.writer.append(op(1, OpState::kIssued));  // never completes: overwritten
  for (uint64_t s = 2; s <= 40; ++s) ring.writer.append(op(s, OpState::kCompleted));
  const std::vector<uint64_t> got = follow(f, ring);
  ASSERT_EQ(got.size(), 16u);  // the window: positions 24..39
  EXPECT_EQ(got.front(), 25u);
  EXPECT_EQ(got.back(), 40u);
  EXPECT_EQ(follow(f, ring), std::vector<uint64_t>{});
}

}  // namespace
}  // namespace xpu_timer::supervisor
