#include "supervisor/analysis/link_transfer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/op_names.h"
#include "common/status_page_layout.h"

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSec = 1'000'000'000;
constexpr uint64_t kComm = 0x1a2b3c4d5e6f7a8bull;
constexpr uint64_t kBytes = 32ull << 20;  // 32 MiB: size bucket 25
constexpr uint64_t kT0 = 100 * kSec;
constexpr uint16_t kAllReduce = static_cast<uint16_t>(proto::OpName::kAllReduce);

// Member `rank` of collective `seq`: arriving at `start`, ending at `end`.
TransferPart part(int rank, uint64_t seq, uint64_t start, uint64_t end, int nranks = 4,
                  uint16_t name = kAllReduce) {
  TransferPart p;
  p.rank = rank;
  p.comm = kComm;
  p.seq = seq;
  p.name = name;
  p.dtype = static_cast<uint8_t>(proto::DType::kBF16);
  p.nranks = static_cast<uint32_t>(nranks);
  p.bytes = kBytes;
  p.start_ns = start;
  p.end_ns = end;
  p.timed = true;
  return p;
}

// A ring all-reduce over an NVLink whose transfer after the last arrival
// takes `transfer` on every member; `arrive[r]` after kT0 + seq * 10 ms.
std::vector<TransferPart> collective(uint64_t seq, const std::vector<uint64_t>& arrive,
                                     uint64_t transfer) {
  const uint64_t base = kT0 + seq * 10 * kMs;
  const uint64_t last = base + *std::max_element(arrive.begin(), arrive.end());
  std::vector<TransferPart> out;
  for (size_t r = 0; r < arrive.size(); ++r) {
    out.push_back(part(static_cast<int>(r), seq, base + arrive[r], last + transfer,
                       static_cast<int>(arrive.size())));
  }
  return out;
}

void add_all(LinkTransferMeter* m, const std::vector<TransferPart>& parts, uint64_t now) {
  for (const TransferPart& p : parts) m->add(p, now);
}

const TransferSeries* find_series(const TransferReport& r, int rank) {
  for (const TransferSeries& s : r.series) {
    if (s.key.rank == rank) return &s;
  }
  return nullptr;
}

const RankCommTime* find_time(const TransferReport& r, int rank) {
  for (const RankCommTime& t : r.times) {
    if (t.rank == rank) return &t;
  }
  return nullptr;
}

// bytes / seconds x the all-reduce factor of 4 ranks.
double busbw(uint64_t bytes, uint64_t ns) {
  return static_cast<double>(bytes) / (static_cast<double>(ns) / 1e9) * 1.5;
}

// The series a late member does not move: its peers' GPU time grows by the
// wait (today's series, bytes over GPU time, falls 25-fold), the transfer
// after its arrival does not.
TEST(LinkTransfer, LateMemberLeavesTheTransferBandwidthAtTheLinks) {
  LinkTransferMeter m(30 * kSec);
  const uint64_t transfer = 200 * kUs;
  std::vector<uint64_t> gpu_ns(4, 0);
  for (uint64_t seq = 1; seq <= 10; ++seq) {
    // Rank 3 arrives 5 ms after the others.
    const auto parts = collective(seq, {0, 10 * kUs, 20 * kUs, 5 * kMs}, transfer);
    for (const TransferPart& p : parts) gpu_ns[p.rank] += p.end_ns - p.start_ns;
    add_all(&m, parts, kT0 + seq * 10 * kMs);
  }
  const TransferReport r = m.report(kT0 + kSec);
  EXPECT_EQ(r.counts.measured, 10u);
  ASSERT_EQ(r.series.size(), 4u);
  const double link = busbw(kBytes, transfer);  // 251.7 GB/s
  for (int rank = 0; rank < 4; ++rank) {
    const TransferSeries* s = find_series(r, rank);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->key.op, kAllReduce);
    EXPECT_EQ(s->key.size_bucket, 25);
    EXPECT_EQ(s->key.nranks, 4u);
    EXPECT_EQ(s->collectives, 10u);
    EXPECT_NEAR(s->bus_bandwidth, link, link * 1e-9) << "rank " << rank;
    // Bytes over the rank's own GPU time, as today's series computes it.
    const double today = busbw(10 * kBytes, gpu_ns[rank]);
    if (rank != 3) {
      EXPECT_LT(today, link / 25) << "rank " << rank;
    }
  }
  // The waits: each member's time to the last arrival; the last waited 0.
  const RankCommTime* t0 = find_time(r, 0);
  const RankCommTime* t3 = find_time(r, 3);
  ASSERT_NE(t0, nullptr);
  ASSERT_NE(t3, nullptr);
  EXPECT_EQ(t0->wait_ns, 10 * 5 * kMs);
  EXPECT_EQ(t0->transfer_ns, 10 * transfer);
  EXPECT_EQ(t3->wait_ns, 0u);
  EXPECT_EQ(t3->transfer_ns, 10 * transfer);
  EXPECT_EQ(t0->comm, kComm);
}

// Members that end apart (a ring's last step reaches them in turn): the
// transfer is the least GPU time, the last arrival's; the others' later ends
// count as their wait, so wait + transfer is each one's GPU time exactly.
TEST(LinkTransfer, WaitPlusTransferIsEachMembersGpuTime) {
  LinkTransferMeter m(30 * kSec);
  auto parts = collective(1, {0, 1 * kMs, 2 * kMs, 3 * kMs}, 300 * kUs);
  parts[0].end_ns += 40 * kUs;
  parts[1].end_ns += 10 * kUs;
  add_all(&m, parts, kT0);
  const TransferReport r = m.report(kT0 + kSec);
  for (const TransferPart& p : parts) {
    const RankCommTime* t = find_time(r, p.rank);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->transfer_ns, 300 * kUs);
    EXPECT_EQ(t->wait_ns + t->transfer_ns, p.end_ns - p.start_ns) << "rank " << p.rank;
  }
  EXPECT_EQ(find_time(r, 0)->wait_ns, 3 * kMs + 40 * kUs);
}

// Each rank maps its GPU onto the host clock with its own error. Offsets of
// milliseconds, more than the transfer (a clock-based e_i - max start would
// be negative for three members), change nothing: no two clocks are
// compared. The transfer stays within its bounds on the true clock:
// min_i (e_i - S) <= T <= e_L - S.
TEST(LinkTransfer, ClockOffsetsBetweenRanksChangeNothing) {
  auto truth = collective(1, {0, 50 * kUs, 120 * kUs, 400 * kUs}, 250 * kUs);
  truth[1].end_ns += 30 * kUs;  // ends apart by tens of microseconds, as on real GPUs
  truth[2].end_ns -= 20 * kUs;
  auto skewed = truth;
  const int64_t offset_ns[] = {0, -1'000'000, 3'000'000, -2'500'000};
  for (TransferPart& p : skewed) {
    p.start_ns = static_cast<uint64_t>(static_cast<int64_t>(p.start_ns) + offset_ns[p.rank]);
    p.end_ns = static_cast<uint64_t>(static_cast<int64_t>(p.end_ns) + offset_ns[p.rank]);
  }
  uint64_t max_start = 0;
  for (const TransferPart& p : skewed) max_start = std::max(max_start, p.start_ns);
  int before_max_start = 0;
  for (const TransferPart& p : skewed) before_max_start += p.end_ns < max_start;
  EXPECT_EQ(before_max_start, 3) << "the offsets are larger than the transfer";

  LinkTransferMeter a(30 * kSec), b(30 * kSec);
  add_all(&a, truth, kT0);
  add_all(&b, skewed, kT0);
  const TransferReport ra = a.report(kT0 + kSec), rb = b.report(kT0 + kSec);
  ASSERT_EQ(ra.times.size(), 4u);
  ASSERT_EQ(rb.times.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(ra.times[i].wait_ns, rb.times[i].wait_ns);
    EXPECT_EQ(ra.times[i].transfer_ns, rb.times[i].transfer_ns);
    EXPECT_EQ(ra.series[i].bus_bandwidth, rb.series[i].bus_bandwidth);
  }
  // Bounds on the true clock: S = 400 us, the ends 250+30, 250-20, 250, 250.
  const uint64_t t = ra.times[0].transfer_ns;
  EXPECT_GE(t, 230 * kUs);  // min_i (e_i - S)
  EXPECT_LE(t, 250 * kUs);  // e_L - S
  EXPECT_EQ(t, 250 * kUs);  // the last arrival's own GPU time
}

// A member's record that never comes: the collective is not measured, and
// once settled it is counted missing; members that never report the
// communicator here are on another node.
TEST(LinkTransfer, MissingAndRemoteMembersAreCountedNotMeasured) {
  LinkTransferMeter m(30 * kSec);
  add_all(&m, collective(1, {0, 0, 0, 0}, 200 * kUs), kT0);
  auto second = collective(2, {0, 0, 0, 0}, 200 * kUs);
  second.pop_back();  // rank 3's record of seq 2 was lost
  add_all(&m, second, kT0);
  // Another communicator of 8 ranks, 4 of them on this node.
  auto wide = collective(1, {0, 0, 0, 0}, 200 * kUs);
  for (TransferPart& p : wide) {
    p.comm = kComm + 1;
    p.nranks = 8;
  }
  add_all(&m, wide, kT0);

  TransferReport r = m.report(kT0 + LinkTransferMeter::kSettleNs - 1);
  EXPECT_EQ(r.counts.measured, 1u);
  EXPECT_EQ(r.counts.missing + r.counts.remote, 0u) << "not settled yet";
  r = m.report(kT0 + LinkTransferMeter::kSettleNs);
  EXPECT_EQ(r.counts.measured, 1u);
  EXPECT_EQ(r.counts.missing, 1u);
  EXPECT_EQ(r.counts.remote, 1u);
  EXPECT_EQ(r.counts.sampled_out, 0u);
  EXPECT_EQ(find_time(r, 0)->collectives, 1u);
  // Settled collectives are gone: a late record starts a new one, which
  // settles on its own.
  m.add(collective(2, {0, 0, 0, 0}, 200 * kUs)[3], kT0 + 3 * kSec);
  r = m.report(kT0 + 6 * kSec);
  EXPECT_EQ(r.counts.missing, 2u);
  EXPECT_EQ(r.counts.measured, 1u);
}

// One member sampled out: its GPU time is not measured, the collective is
// skipped and counted; a rank reporting twice is one member.
TEST(LinkTransfer, SampledOutMemberSkipsTheCollective) {
  LinkTransferMeter m(30 * kSec);
  auto parts = collective(1, {0, 0, 0, 0}, 200 * kUs);
  parts[2].timed = false;
  m.add(parts[0], kT0);
  m.add(parts[0], kT0);
  m.add(parts[1], kT0);
  m.add(parts[2], kT0);
  TransferReport r = m.report(kT0);
  EXPECT_EQ(r.counts.sampled_out, 0u) << "three of four members";
  m.add(parts[3], kT0);
  r = m.report(kT0 + 10 * kSec);
  EXPECT_EQ(r.counts.sampled_out, 1u);
  EXPECT_EQ(r.counts.measured, 0u);
  EXPECT_EQ(r.counts.missing, 0u);
  EXPECT_TRUE(r.series.empty());
  EXPECT_TRUE(r.times.empty());
}

// The bandwidth is over the window: a key with nothing measured in it has
// no bandwidth (not a stale one), its counters stay.
TEST(LinkTransfer, BandwidthIsOverTheWindow) {
  LinkTransferMeter m(30 * kSec);
  add_all(&m, collective(1, {0, 0, 0, 0}, 200 * kUs), kT0);
  add_all(&m, collective(2, {0, 0, 0, 0}, 400 * kUs), kT0);
  TransferReport r = m.report(kT0 + kSec);
  // Two collectives: bytes over their summed transfer time.
  EXPECT_NEAR(find_series(r, 0)->bus_bandwidth, busbw(2 * kBytes, 600 * kUs), 1);
  r = m.report(kT0 + 40 * kSec);
  EXPECT_EQ(find_series(r, 0)->bus_bandwidth, 0);
  EXPECT_EQ(find_series(r, 0)->collectives, 2u);
  EXPECT_EQ(find_time(r, 0)->transfer_ns, 600 * kUs);
}

// Hostile or broken records cannot pin the bandwidth or grow the meter: an
// end far ahead of its reading counts when it was read, and communicators
// beyond kMaxComms are not remembered.
TEST(LinkTransfer, FutureEndsAndCommunicatorFloodsAreBounded) {
  LinkTransferMeter m(30 * kSec);
  auto parts = collective(1, {0, 0, 0, 0}, 200 * kUs);
  for (TransferPart& p : parts) {
    p.start_ns += 1000 * kSec;
    p.end_ns += 1000 * kSec;
  }
  add_all(&m, parts, kT0);
  TransferReport r = m.report(kT0 + kSec);
  EXPECT_GT(find_series(r, 0)->bus_bandwidth, 0);
  r = m.report(kT0 + 40 * kSec);
  EXPECT_EQ(find_series(r, 0)->bus_bandwidth, 0) << "an end ahead kept its bin";
  for (uint64_t c = 0; c < LinkTransferMeter::kMaxComms + 100; ++c) {
    TransferPart p = part(0, 1, kT0, kT0 + kUs);
    p.comm = 1000 + c;
    m.add(p, kT0 + 40 * kSec);
  }
  r = m.report(kT0 + 50 * kSec);
  // The first kMaxComms - 1 are remembered with one rank of four: members
  // elsewhere; the others, not remembered, are missing.
  EXPECT_EQ(r.counts.remote, LinkTransferMeter::kMaxComms - 1);
  EXPECT_EQ(r.counts.missing, 101u);
}

// Only AllReduce, AllGather and ReduceScatter: a Broadcast's root may end
// before the last member arrives. AllGather's factor is (n-1)/n.
TEST(LinkTransfer, MeasuresSymmetricCollectivesWithTheirBusFactor) {
  LinkTransferMeter m(30 * kSec);
  const auto gather = static_cast<uint16_t>(proto::OpName::kAllGather);
  const auto bcast = static_cast<uint16_t>(proto::OpName::kBroadcast);
  for (int r = 0; r < 2; ++r) {
    m.add(part(r, 1, kT0, kT0 + 100 * kUs, 2, gather), kT0);
    m.add(part(r, 2, kT0, kT0 + 100 * kUs, 2, bcast), kT0);
  }
  const TransferReport r = m.report(kT0 + 10 * kSec);
  EXPECT_EQ(r.counts.measured, 1u);
  EXPECT_EQ(r.counts.missing + r.counts.remote + r.counts.sampled_out, 0u);
  ASSERT_EQ(r.series.size(), 2u);
  EXPECT_EQ(r.series[0].key.op, gather);
  EXPECT_NEAR(r.series[0].bus_bandwidth, static_cast<double>(kBytes) / 100e-6 * 0.5, 1);
}

// The records the meter takes: completed collectives of the measured
// operations, timed or sampled out; not a group, a failed one, a GEMM.
TEST(LinkTransfer, FeedTakesCompletedCollectivesOnly) {
  LinkTransferMeter m(30 * kSec);
  auto record = [](int seq, uint8_t flags) {
    recorder::RecordData d;
    d.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
    d.name = kAllReduce;
    d.state = static_cast<uint8_t>(recorder::OpState::kCompleted);
    d.flags = flags;
    d.comm_hash = kComm;
    d.seq = static_cast<uint64_t>(seq);
    d.nranks = 2;
    d.bytes = kBytes;
    d.gpu_start_ns = kT0;
    d.gpu_end_ns = kT0 + 100 * kUs;
    return d;
  };
  // seq 1: both timed; seq 2: one sampled out (its markers only).
  for (int r = 0; r < 2; ++r) feed_transfer_record(&m, r, record(1, recorder::kRecTimed), kT0);
  feed_transfer_record(&m, 0, record(2, recorder::kRecTimed), kT0);
  feed_transfer_record(&m, 1, record(2, recorder::kRecEndOnly), kT0);
  // Not taken: a group, a failed collective, a GEMM.
  feed_transfer_record(&m, 0, record(3, recorder::kRecTimed | recorder::kRecGroup), kT0);
  recorder::RecordData failed = record(4, recorder::kRecTimed);
  failed.state = static_cast<uint8_t>(recorder::OpState::kFailed);
  feed_transfer_record(&m, 0, failed, kT0);
  recorder::RecordData gemm = record(5, recorder::kRecTimed);
  gemm.kind = static_cast<uint8_t>(proto::OpKind::kGemm);
  feed_transfer_record(&m, 0, gemm, kT0);
  const TransferReport r = m.report(kT0 + 10 * kSec);
  EXPECT_EQ(r.counts.measured, 1u);
  EXPECT_EQ(r.counts.sampled_out, 1u);
  EXPECT_EQ(r.counts.missing + r.counts.remote, 0u);
  EXPECT_EQ(proto::log2_bucket(kBytes), 25);
}

}  // namespace
}  // namespace xpu_timer::supervisor
