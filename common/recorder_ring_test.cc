// The flight-recorder ring's reader against what the other side may do:
//  - a seeded mutation fuzz of RingReader::read_image (dump files are
//    untrusted input): thousands of mutated images, none may crash, and
//    every record accepted must be the stable content of a slot whose
//    version names a position inside the window the header describes;
//  - the live ring under concurrency: a writer thread appends and updates
//    records whose every field derives from their position and stage while a
//    reader, attached to the same file through its own mapping, reads again
//    and again: no torn or mis-positioned record may ever be accepted.
#include "common/recorder_ring.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace xpu_timer::recorder {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/recorder_ring_test.XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    if (!path_.empty() && std::system(("rm -rf '" + path_ + "'").c_str()) != 0) {
      // A folder left in /tmp: harmless.
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Every field a function of (position, stage): stage 0 issued, 1 running,
// 2 completed. A record mixing two writes cannot satisfy it.
RecordData derived(uint64_t pos, int stage) {
  RecordData d;
  d.name = static_cast<uint16_t>(pos % 2 ? proto::OpName::kAllReduce : proto::OpName::kGemmEx);
  d.kind = static_cast<uint8_t>(pos % 2 ? proto::OpKind::kNccl : proto::OpKind::kGemm);
  d.dtype = static_cast<uint8_t>(pos % 11);
  d.state = static_cast<uint8_t>(stage == 0   ? OpState::kIssued
                                 : stage == 1 ? OpState::kRunning
                                              : OpState::kCompleted);
  d.flags = stage == 2 ? kRecTimed : 0;
  d.red_op = static_cast<uint8_t>(pos % 5);
  d.device = static_cast<int32_t>(pos % 8);
  d.peer = static_cast<int32_t>(pos % 3) - 1;
  d.nranks = static_cast<uint32_t>(pos * 13);
  d.group_size = 1 + static_cast<uint32_t>(pos % 4);
  d.stream = pos * 17;
  d.comm_hash = pos * 0x9e3779b97f4a7c15ull;
  d.seq = pos;
  d.count = pos * 5;
  d.bytes = pos * 3;
  d.flops = pos * 7;
  d.m = static_cast<uint32_t>(pos);
  d.n = static_cast<uint32_t>(pos + 1);
  d.k = static_cast<uint32_t>(pos + 2);
  d.batch = static_cast<uint32_t>(pos + 3);
  d.launch_ns = 1000 + pos;
  d.ready_ns = stage >= 1 ? 2000 + pos : 0;
  d.gpu_start_ns = stage == 2 ? 3000 + pos : 0;
  d.gpu_end_ns = stage == 2 ? 4000 + pos : 0;
  d.op_id = pos;
  return d;
}

bool same(const RecordData& a, const RecordData& b) {
  return a.name == b.name && a.kind == b.kind && a.dtype == b.dtype && a.state == b.state &&
         a.flags == b.flags && a.red_op == b.red_op && a.device == b.device && a.peer == b.peer &&
         a.nranks == b.nranks && a.group_size == b.group_size && a.stream == b.stream &&
         a.comm_hash == b.comm_hash && a.seq == b.seq && a.count == b.count && a.bytes == b.bytes &&
         a.flops == b.flops && a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch &&
         a.launch_ns == b.launch_ns && a.ready_ns == b.ready_ns &&
         a.gpu_start_ns == b.gpu_start_ns && a.gpu_end_ns == b.gpu_end_ns && a.op_id == b.op_id;
}

::testing::AssertionResult self_consistent(const RecordData& r) {
  const int stage = r.state == static_cast<uint8_t>(OpState::kIssued)    ? 0
                    : r.state == static_cast<uint8_t>(OpState::kRunning) ? 1
                                                                         : 2;
  if (same(r, derived(r.op_id, stage))) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "record at " << r.op_id << " is torn or misplaced: seq " << r.seq << " bytes "
         << r.bytes << " state " << int(r.state);
}

// The next names id of a writer's ring (its header's count).
uint32_t w_names(const RingWriter& w) {
  const std::string img = read_all(w.path());
  RingHeader h;
  std::memcpy(static_cast<void*>(&h), img.data(), sizeof(h));
  return static_cast<uint32_t>(h.names.load());
}

// A live ring of 16 records written 40 times over (its window wraps), as a
// file image: the realistic input besides write_ring_image's dumps.
std::string wrapped_live_image(const std::string& dir) {
  RingWriter w;
  EXPECT_TRUE(w.create(dir.c_str(), RankIdentity{3, 3, 8, 8, 0}, 4242, 16));
  for (const char* name : {"(other)", "forward", "backward"}) w.set_name(w_names(w), name);
  for (uint64_t pos = 0; pos < 40; ++pos) {
    w.append(derived(pos, 0));
    if (pos >= 2) w.update(pos - 2, derived(pos - 2, 2));
  }
  return read_all(w.path());
}

std::string dump_image(const std::string& dir) {
  RingSnapshot s;
  s.rank = 1;
  s.world_size = 4;
  for (uint64_t pos = 0; pos < 20; ++pos) s.records.push_back(derived(pos, 2));
  s.names = {"(other)", "train_step"};
  std::string error;
  EXPECT_TRUE(write_ring_image(dir + "/d.timeline", s, &error)) << error;
  return read_all(dir + "/d.timeline");
}

template <typename T>
void put(std::string* img, size_t off, T v) {
  if (off + sizeof(T) <= img->size()) std::memcpy(&(*img)[off], &v, sizeof(T));
}

// What a hostile or broken writer could leave: any byte, counts and versions
// chosen to sit just inside or outside the window, a forged stable version,
// a cut or extended file.
void mutate(std::mt19937_64& rng, std::string* img) {
  const size_t rec0 = sizeof(RingHeader);
  const uint64_t interesting[] = {0,
                                  1,
                                  2,
                                  15,
                                  16,
                                  17,
                                  31,
                                  32,
                                  33,
                                  40,
                                  kVersionStride,
                                  kVersionStride - 1,
                                  ~0ull,
                                  1ull << 63,
                                  kMaxCapacity};
  const int n = 1 + static_cast<int>(rng() % 6);
  for (int i = 0; i < n && !img->empty(); ++i) {
    const uint64_t pick = interesting[rng() % (sizeof(interesting) / sizeof(interesting[0]))];
    switch (rng() % 10) {
      case 0:  // a random byte
        (*img)[rng() % img->size()] = static_cast<char>(rng());
        break;
      case 1:  // the head
        put<uint64_t>(img, offsetof(RingHeader, head), rng() % 2 ? pick : rng() % 100);
        break;
      case 2:  // the capacity
        put<uint32_t>(img, offsetof(RingHeader, capacity),
                      static_cast<uint32_t>(rng() % 2 ? pick : 1u << (rng() % 22)));
        break;
      case 3: {  // a record's version forged stable for some position
        const size_t slot = rng() % 40;
        put<uint64_t>(img, rec0 + slot * sizeof(Record),
                      (rng() % 64) * kVersionStride + 2 * (rng() % 3) + (rng() % 4 == 0));
        break;
      }
      case 4:  // an aligned word anywhere
        put<uint64_t>(img, (rng() % (img->size() / 8 + 1)) * 8, pick);
        break;
      case 5:  // cut short
        img->resize(rng() % (img->size() + 1));
        break;
      case 6:  // extended with garbage
        img->append(rng() % 300, static_cast<char>(rng()));
        break;
      case 7:  // header sizes or version
        put<uint32_t>(img, 8 + 4 * (rng() % 3), static_cast<uint32_t>(pick));
        break;
      case 8:  // the names count, or a byte of the names region (the file's last bytes)
        if (rng() % 2) {
          put<uint64_t>(img, offsetof(RingHeader, names), rng() % 2 ? pick : rng() % 80);
        } else {
          (*img)[img->size() - 1 -
                 rng() % std::min<size_t>(img->size(), kRingNames * kRingNameBytes)] =
              static_cast<char>(rng());
        }
        break;
      default:  // a record field
        put<uint64_t>(img, rec0 + (rng() % 40) * sizeof(Record) + 8 * (1 + rng() % 16), pick);
        break;
    }
  }
}

// XPU_TIMER_RECORDER_SIZE as a ring: a power of two, 16 to kMaxCapacity; 0: none.
TEST(RecorderRing, CapacityIsThePowerOfTwoAtOrAboveTheRequest) {
  EXPECT_EQ(capacity_for(0), 0u);
  EXPECT_EQ(capacity_for(-5), 0u);
  EXPECT_EQ(capacity_for(1), 16u);
  EXPECT_EQ(capacity_for(17), 32u);
  EXPECT_EQ(capacity_for(kDefaultCapacity), kDefaultCapacity);
  EXPECT_EQ(capacity_for(kMaxCapacity), kMaxCapacity);
  EXPECT_EQ(capacity_for(int64_t{kMaxCapacity} + 1), kMaxCapacity);
}

TEST(RecorderRingNames, LiveRingDumpAndVersionOneImage) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  RingWriter w;
  ASSERT_TRUE(w.create(dir.path().c_str(), RankIdentity{}, 77, 16));
  w.set_name(0, "(other)");
  w.set_name(2, "skipped: not the next id");
  w.set_name(1, "forward");
  w.set_name(1, "written once: kept");
  w.set_name(2, std::string(100, 'x').c_str());  // cut to 47 bytes
  w.append(derived(0, 2));
  std::string error;
  auto reader = RingReader::attach(w.path(), 77, 0, &error);
  ASSERT_NE(reader, nullptr) << error;
  RingSnapshot live;
  ASSERT_TRUE(reader->read(&live, &error)) << error;
  const std::vector<std::string> expected = {"(other)", "forward", std::string(47, 'x')};
  EXPECT_EQ(live.names, expected);

  // A dump keeps them; an unprintable byte reads as '?'.
  live.names[1][0] = '\x01';
  ASSERT_TRUE(write_ring_image(dir.path() + "/n.timeline", live, &error)) << error;
  const std::string img = read_all(dir.path() + "/n.timeline");
  RingSnapshot dumped;
  ASSERT_TRUE(RingReader::read_image(img.data(), img.size(), &dumped, &error)) << error;
  EXPECT_EQ(dumped.names, (std::vector<std::string>{"(other)", "?orward", std::string(47, 'x')}));
  ASSERT_EQ(dumped.records.size(), 1u);

  // A version 1 image (no names region) is still read, without names.
  std::string v1 = img.substr(0, ring_records_bytes(16));
  put<uint32_t>(&v1, offsetof(RingHeader, version), 1u);
  RingSnapshot old;
  ASSERT_TRUE(RingReader::read_image(v1.data(), v1.size(), &old, &error)) << error;
  EXPECT_TRUE(old.names.empty());
  EXPECT_EQ(old.records.size(), 1u);
  // The same size claiming version 2 lacks its names region.
  put<uint32_t>(&v1, offsetof(RingHeader, version), 2u);
  EXPECT_FALSE(RingReader::read_image(v1.data(), v1.size(), &old, &error));
}

// Version 3 keeps a GEMM's transposes in what was padding; a version 2 image
// may hold any byte there and reads as unknown (0).
TEST(RecorderRing, GemmTransposesAreReadFromVersion3Only) {
  EXPECT_EQ(gemm_ops_of(1, 0), 0x12);
  EXPECT_EQ(gemm_op_a(0x12), 1);
  EXPECT_EQ(gemm_op_b(0x12), 0);
  EXPECT_EQ(gemm_ops_of(7, -1), 0);
  EXPECT_EQ(gemm_op_a(0), -1);
  EXPECT_EQ(gemm_op_b(0x40), -1);
  RingSnapshot s;
  s.rank = 0;
  s.world_size = 1;
  RecordData d;
  d.name = static_cast<uint16_t>(proto::OpName::kGemmEx);
  d.gemm_ops = gemm_ops_of(1, 0);
  s.records.push_back(d);
  const RingImage img = ring_image(s);
  RingSnapshot back;
  std::string error;
  ASSERT_TRUE(RingReader::read_image(img.data(), img.bytes, &back, &error)) << error;
  ASSERT_EQ(back.records.size(), 1u);
  EXPECT_EQ(back.records[0].gemm_ops, 0x12);
  std::string v2(img.data(), img.bytes);
  put<uint32_t>(&v2, offsetof(RingHeader, version), 2u);
  ASSERT_TRUE(RingReader::read_image(v2.data(), v2.size(), &back, &error)) << error;
  ASSERT_EQ(back.records.size(), 1u);
  EXPECT_EQ(back.records[0].gemm_ops, 0);
  put<uint32_t>(&v2, offsetof(RingHeader, version), kRingVersion + 1);
  EXPECT_FALSE(RingReader::read_image(v2.data(), v2.size(), &back, &error));
  EXPECT_EQ(error, "ring format version 5, this build reads 1 to 4");
}

// A host range's start and end lie in the slots of an operation's GPU start
// and end, in every version: a dump of any version reads them under their
// own names.
TEST(RecorderRing, AHostRangeKeepsItsTimesInTheGpuTimesSlots) {
  RingSnapshot s;
  s.rank = 0;
  s.world_size = 1;
  RecordData range;
  range.name = static_cast<uint16_t>(proto::OpName::kStep);
  range.kind = static_cast<uint8_t>(proto::OpKind::kRange);
  range.flags = kRecHost;
  range.launch_ns = range.host_start_ns = 5000;
  range.host_end_ns = 9000;
  s.records.push_back(range);
  RecordData gemm = derived(0, 2);
  s.records.push_back(gemm);
  const RingImage img = ring_image(s);
  const size_t slot0 = sizeof(RingHeader) + offsetof(Record, data);
  uint64_t start = 0, end = 0;
  std::memcpy(&start, img.data() + slot0 + 104, sizeof(start));
  std::memcpy(&end, img.data() + slot0 + 112, sizeof(end));
  EXPECT_EQ(start, 5000u);
  EXPECT_EQ(end, 9000u);
  std::string v1(img.data(), img.bytes);
  for (uint32_t version : {1u, kRingVersion}) {
    put<uint32_t>(&v1, offsetof(RingHeader, version), version);
    RingSnapshot back;
    std::string error;
    ASSERT_TRUE(RingReader::read_image(v1.data(), v1.size(), &back, &error)) << error;
    ASSERT_EQ(back.records.size(), 2u);
    EXPECT_TRUE(is_host_range(back.records[0]));
    EXPECT_EQ(back.records[0].host_start_ns, 5000u) << "version " << version;
    EXPECT_EQ(back.records[0].host_end_ns, 9000u);
    EXPECT_EQ(span_end_ns(back.records[0]), 9000u);
    EXPECT_FALSE(is_host_range(back.records[1]));
    EXPECT_EQ(span_end_ns(back.records[1]), gemm.gpu_end_ns);
  }
}

// Version 4: a collective names the Python line that issued it, an entry of
// the sites region; the written ring, a dump image and the live reader agree,
// a long path keeps its end, and an older ring's collective has none.
TEST(RecorderRing, ACollectiveNamesItsCallSiteFromVersion4) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  RingWriter w;
  ASSERT_TRUE(w.create(dir.path().c_str(), RankIdentity{0, 0, 1}, getpid(), 16));
  SiteEntry train;
  train.line = 42;
  std::snprintf(train.function, sizeof(train.function), "train_step");
  std::snprintf(train.file, sizeof(train.file), "/src/train.py");
  const std::string long_path = "/" + std::string(300, 'd') + "/model/parallel.py";
  const SiteEntry deep = site_entry(CodeFrame{"forward", long_path, 7, true});
  w.set_site(0, train);
  w.set_site(2, train);  // out of order: ignored
  w.set_site(1, deep);
  RecordData gemm;
  gemm.name = static_cast<uint16_t>(proto::OpName::kGemmEx);
  gemm.kind = static_cast<uint8_t>(proto::OpKind::kGemm);
  gemm.m = 2;  // a GEMM's m is its shape, never a site
  RecordData ar;
  ar.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  ar.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  ar.m = call_site_field(1);
  RecordData bare = ar;
  bare.m = call_site_field(-1);
  w.append(gemm);
  w.append(ar);
  w.append(bare);
  std::string error;
  auto reader = RingReader::attach(w.path(), getpid(), 0, &error);
  ASSERT_NE(reader, nullptr) << error;
  RingSnapshot live;
  ASSERT_TRUE(reader->read(&live, &error)) << error;
  ASSERT_EQ(live.sites.size(), 2u);
  EXPECT_EQ(live.sites[0], (CodeFrame{"train_step", "/src/train.py", 42, true}));
  EXPECT_EQ(live.sites[1].function, "forward");
  EXPECT_EQ(live.sites[1].file.size(), sizeof(SiteEntry::file) - 1);
  EXPECT_EQ(live.sites[1].file, long_path.substr(long_path.size() - live.sites[1].file.size()));
  ASSERT_EQ(live.records.size(), 3u);
  EXPECT_EQ(call_site(live, live.records[0]), nullptr);
  ASSERT_NE(call_site(live, live.records[1]), nullptr);
  EXPECT_EQ(call_site(live, live.records[1])->function, "forward");
  EXPECT_EQ(call_site(live, live.records[2]), nullptr);
  // A dump holds the same.
  const RingImage img = ring_image(live);
  RingSnapshot dumped;
  ASSERT_TRUE(RingReader::read_image(img.data(), img.bytes, &dumped, &error)) << error;
  EXPECT_EQ(dumped.sites, live.sites);
  ASSERT_NE(call_site(dumped, dumped.records[1]), nullptr);
  EXPECT_EQ(*call_site(dumped, dumped.records[1]), live.sites[1]);
  // The same image called version 3: no sites, no collective names one.
  std::string v3(img.data(), img.bytes);
  put<uint32_t>(&v3, offsetof(RingHeader, version), 3u);
  RingSnapshot old;
  ASSERT_TRUE(RingReader::read_image(v3.data(), v3.size(), &old, &error)) << error;
  EXPECT_TRUE(old.sites.empty());
  EXPECT_EQ(old.records[1].m, 0u);
  EXPECT_EQ(old.records[0].m, 2u);
  // A version 4 header whose sites region is not this build's is refused.
  std::string odd(img.data(), img.bytes);
  put<uint32_t>(&odd, offsetof(RingHeader, max_sites), kRingSites + 1);
  EXPECT_FALSE(RingReader::read_image(odd.data(), odd.size(), &old, &error));
  EXPECT_EQ(error, "ring call sites region differs from this build's");
}

TEST(RecorderRingFuzz, MutatedImagesNeverCrashAndOnlyWindowRecordsAreAccepted) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string bases[] = {wrapped_live_image(dir.path()), dump_image(dir.path())};
  std::mt19937_64 rng(20261123);
  size_t accepted_images = 0, accepted_records = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    std::string img = bases[iter % 2];
    mutate(rng, &img);
    RingSnapshot snap;
    std::string error;
    if (!RingReader::read_image(img.data(), img.size(), &snap, &error)) {
      ASSERT_FALSE(error.empty()) << iter;
      ASSERT_TRUE(snap.records.empty()) << iter;
      continue;
    }
    ++accepted_images;
    // What the header (as mutated) says, read independently of the reader.
    RingHeader h;
    std::memcpy(static_cast<void*>(&h), img.data(), sizeof(h));
    const uint64_t head = h.head.load(), cap = h.capacity;
    ASSERT_EQ(snap.head, head);
    ASSERT_EQ(snap.capacity, cap);
    ASSERT_GE(img.size(), h.version >= 4   ? ring_file_bytes(h.capacity)
                          : h.version >= 2 ? ring_sites_offset(h.capacity)
                                           : ring_records_bytes(h.capacity))
        << iter;
    ASSERT_LE(snap.sites.size(), static_cast<size_t>(kRingSites)) << iter;
    for (const CodeFrame& f : snap.sites) {
      for (const std::string* text : {&f.function, &f.file}) {
        for (char c : *text) ASSERT_TRUE(c >= 0x20 && c < 0x7f) << iter;
      }
      ASSERT_GE(f.line, 0) << iter;
    }
    ASSERT_LE(snap.names.size(), static_cast<size_t>(kRingNames)) << iter;
    for (const std::string& name : snap.names) {
      ASSERT_LT(name.size(), static_cast<size_t>(kRingNameBytes)) << iter;
      for (char c : name) ASSERT_TRUE(c >= 0x20 && c < 0x7f) << iter;
    }
    const uint64_t first = head > cap ? head - cap : 0;
    ASSERT_EQ(snap.records.size() + snap.skipped, head - first) << iter;
    uint64_t prev = 0;
    for (size_t i = 0; i < snap.records.size(); ++i) {
      const RecordData& r = snap.records[i];
      ASSERT_GE(r.op_id, first) << iter;
      ASSERT_LT(r.op_id, head) << iter;
      if (i > 0) {
        ASSERT_GT(r.op_id, prev) << iter;
      }
      prev = r.op_id;
      // The slot it came from holds a stable version naming that position,
      // and exactly these fields.
      Record slot;
      std::memcpy(static_cast<void*>(&slot),
                  img.data() + sizeof(RingHeader) + (r.op_id & (cap - 1)) * sizeof(Record),
                  sizeof(Record));
      const uint64_t v = slot.version.load();
      ASSERT_EQ(v / kVersionStride, r.op_id) << iter;
      ASSERT_TRUE(v % kVersionStride != 0 && v % 2 == 0) << iter;
      RecordData expect;
      to_data(slot, &expect);
      expect.op_id = r.op_id;
      // What an older version did not have reads as unknown.
      if (h.version < 3) expect.gemm_ops = 0;
      if (h.version < 4 && expect.kind == static_cast<uint8_t>(proto::OpKind::kNccl)) expect.m = 0;
      ASSERT_TRUE(same(r, expect)) << iter;
      ++accepted_records;
    }
  }
  // The mutations must not all be rejected at the header, or nothing past it
  // was exercised.
  EXPECT_GT(accepted_images, 1000u);
  EXPECT_GT(accepted_records, 10000u);
}

TEST(RecorderRingConcurrency, ReaderNeverAcceptsATornOrMisplacedRecord) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  constexpr uint32_t kCap = 64;
  // The writer runs until the reader has read this often while records were
  // being written (and for at least kMinRecords), however the two threads
  // get scheduled: overlap by handshake, not by timing.
  constexpr uint64_t kMinRecords = 100000, kMinConcurrentReads = 2000;
  RingWriter w;
  ASSERT_TRUE(w.create(dir.path().c_str(), RankIdentity{}, static_cast<int>(getpid()), kCap));
  std::string error;
  // Its own read-only mapping, as the supervisor's would be.
  const auto reader = RingReader::attach(w.path(), static_cast<int>(getpid()), 0, &error);
  ASSERT_NE(reader, nullptr) << error;

  std::atomic<uint64_t> concurrent_reads{0};
  std::atomic<bool> reader_stopped{false}, writer_done{false};
  uint64_t written = 0;
  std::thread writer([&] {
    uint64_t pos = 0;
    for (; pos < kMinRecords ||
           (concurrent_reads.load() < kMinConcurrentReads && !reader_stopped.load());
         ++pos) {
      w.append(derived(pos, 0));
      if (pos >= 1) w.update(pos - 1, derived(pos - 1, 1));
      if (pos >= 5) w.update(pos - 5, derived(pos - 5, 2));
    }
    written = pos;
    writer_done.store(true);
  });
  size_t reads = 0, accepted = 0, skipped = 0;
  RingSnapshot snap;
  for (bool done = false; !done;) {
    done = writer_done.load();  // one more full read after the writer finished
    if (!reader->read(&snap, &error)) {
      ADD_FAILURE() << error;
      break;
    }
    ++reads;
    if (!done && snap.head > 0) concurrent_reads.fetch_add(1);
    skipped += snap.skipped;
    const uint64_t first = snap.head > kCap ? snap.head - kCap : 0;
    bool ok = true;
    for (const RecordData& r : snap.records) {
      ++accepted;
      ok = ok && r.op_id >= first && r.op_id < snap.head && self_consistent(r);
    }
    if (!ok) {
      for (const RecordData& r : snap.records) EXPECT_TRUE(self_consistent(r));
      ADD_FAILURE() << "a record outside the window [" << first << ", " << snap.head
                    << ") or torn was accepted";
      break;
    }
  }
  reader_stopped.store(true);
  writer.join();
  ASSERT_FALSE(HasFailure());
  EXPECT_GE(concurrent_reads.load(), kMinConcurrentReads);
  // The final read sees the finished ring: the last 64 positions, each in
  // its last stage (the newest five not yet completed).
  EXPECT_EQ(snap.head, written);
  ASSERT_EQ(snap.records.size(), kCap);
  EXPECT_EQ(snap.skipped, 0u);
  for (const RecordData& r : snap.records) {
    const int stage = r.op_id + 5 < written ? 2 : (r.op_id + 1 < written ? 1 : 0);
    EXPECT_TRUE(same(r, derived(r.op_id, stage))) << r.op_id;
  }
  std::printf(
      "[   INFO   ] %llu records written; %zu reads, %zu records accepted, %zu skipped "
      "as torn or overwritten\n",
      static_cast<unsigned long long>(written), reads, accepted, skipped);
}

}  // namespace
}  // namespace xpu_timer::recorder
