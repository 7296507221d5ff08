// Deterministic mutation testing of the status page reader, the supervisor's
// side of a file that a rank (another process, possibly broken or hostile)
// writes. The libFuzzer target fuzz/status_page_fuzz.cc does the same guided,
// in a clang build. A valid page lives in a memory file (memfd); each
// iteration restores it, changes what a hostile writer could change (random
// bytes, counts, enum fields, header fields, the seqlock, the file's size)
// and reads it through attach_fd() and read(). None may crash; a refusal must
// say why; an accepted snapshot must have every count and enum in range.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "common/op_names.h"
#include "common/status_page.h"

namespace xpu_timer::proto {
namespace {

constexpr int kPageRank = 5;
constexpr int kIterations = 10000;

// The page a healthy rank would publish mid-training.
void fill_valid_page(StatusPage* p) {
  std::memset(static_cast<void*>(p), 0, sizeof(*p));
  p->magic = kStatusPageMagic;
  p->version = kStatusPageVersion;
  p->page_bytes = sizeof(StatusPage);
  p->pid = getpid();
  p->rank = kPageRank;
  p->world_size = 8;
  p->heartbeat_ns.store(1000);
  p->seq.store(10);
  p->issued_total = 100;
  p->completed_total = 99;
  p->inflight_count = 1;
  p->oldest_inflight.name = static_cast<uint16_t>(OpName::kAllReduce);
  p->oldest_inflight.kind = static_cast<uint8_t>(OpKind::kNccl);
  p->oldest_inflight.dtype = static_cast<uint8_t>(DType::kBF16);
  p->last_completed.name = static_cast<uint16_t>(OpName::kGemmEx);
  p->last_completed.kind = static_cast<uint8_t>(OpKind::kGemm);
  p->ncomms = 3;
  for (uint32_t i = 0; i < p->ncomms; ++i) {
    p->comms[i] = CommSlot{i + 1, 8, kPageRank, 50, 49, 0, 0, {}};
  }
  p->nranges = 3;
  for (uint32_t i = 0; i < p->nranges; ++i) {
    std::snprintf(p->ranges[i].name, kRangeNameBytes, "range_%u", i);
    p->ranges[i].count = i;
  }
  p->steps.source = static_cast<uint32_t>(StepSource::kOptimizer);
  p->nmetrics = 6;
  for (uint32_t i = 0; i < p->nmetrics; ++i) {
    MetricSlot& m = p->metrics[i];
    m.name = static_cast<uint16_t>(i % 2 ? OpName::kAllReduce : OpName::kLtMatmul);
    m.dtype = static_cast<uint8_t>(DType::kF16);
    m.algo = static_cast<uint8_t>(i % 2 ? NcclAlgo::kRing : NcclAlgo::kUnknown);
    m.proto = static_cast<uint8_t>(i % 2 ? NcclProto::kSimple : NcclProto::kUnknown);
    m.transport = static_cast<uint8_t>(i % 2 ? NcclTransport::kInterNode : NcclTransport::kUnknown);
    m.count = 10 + i;
  }
}

// In range by the protocol's own naming functions, independently of the
// reader's checks.
bool op_in_range(const OpRef& op) {
  return (op.name == 0 || std::strcmp(op_name_str(static_cast<OpName>(op.name)), "Unknown") != 0) &&
         op.kind <= static_cast<uint8_t>(OpKind::kRange) &&
         (op.dtype == 0 || std::strcmp(dtype_str(static_cast<DType>(op.dtype)), "unknown") != 0);
}

::testing::AssertionResult snapshot_in_range(const StatusSnapshot& snap) {
  const StatusPage& p = snap.page();
  if (p.ncomms > static_cast<uint32_t>(kMaxComms)) {
    return ::testing::AssertionFailure() << "ncomms " << p.ncomms;
  }
  if (p.nmetrics > static_cast<uint32_t>(kMaxMetrics)) {
    return ::testing::AssertionFailure() << "nmetrics " << p.nmetrics;
  }
  if (p.nranges > static_cast<uint32_t>(kMaxRanges)) {
    return ::testing::AssertionFailure() << "nranges " << p.nranges;
  }
  for (uint32_t i = 0; i < p.nranges; ++i) {  // cleaned: printable, NUL-terminated
    const char* name = p.ranges[i].name;
    if (std::memchr(name, '\0', kRangeNameBytes) == nullptr) {
      return ::testing::AssertionFailure() << "range name " << i << " without a NUL";
    }
    for (const char* c = name; *c != '\0'; ++c) {
      if (static_cast<unsigned char>(*c) < 0x20 || static_cast<unsigned char>(*c) >= 0x7f) {
        return ::testing::AssertionFailure() << "range name " << i << " not printable";
      }
    }
  }
  if (p.steps.source > static_cast<uint32_t>(StepSource::kOptimizer)) {
    return ::testing::AssertionFailure() << "steps.source " << p.steps.source;
  }
  if (!op_in_range(p.oldest_inflight) || !op_in_range(p.last_completed)) {
    return ::testing::AssertionFailure() << "operation enum out of range";
  }
  for (uint32_t i = 0; i < p.nmetrics; ++i) {
    const MetricSlot& m = p.metrics[i];
    OpRef as_op{};
    as_op.name = m.name;
    as_op.dtype = m.dtype;
    const bool ok =
        op_in_range(as_op) && (m.algo == 0 || std::strcmp(nccl_algo_str(m.algo), "unknown") != 0) &&
        (m.proto == 0 || std::strcmp(nccl_proto_str(m.proto), "unknown") != 0) &&
        (m.transport == 0 || std::strcmp(nccl_transport_str(m.transport), "unknown") != 0);
    if (!ok) return ::testing::AssertionFailure() << "metrics[" << i << "] enum out of range";
  }
  if (p.pid != getpid() || p.rank != kPageRank) {
    return ::testing::AssertionFailure() << "header differs from the attached one";
  }
  return ::testing::AssertionSuccess();
}

// A value a hostile writer would pick for a count or an enum: near the
// limits, or anything.
uint32_t nasty_value(std::mt19937* rng) {
  static constexpr uint32_t kValues[] = {
      0,  1,  3,   11,  12,  31,  32,  63,   64,          65,          67,
      68, 96, 200, 255, 256, 257, 999, 1024, 0x7fffffffu, 0x80000000u, 0xffffffffu};
  return (*rng)() % 3 == 0 ? (*rng)() : kValues[(*rng)() % (sizeof(kValues) / sizeof(kValues[0]))];
}

template <typename T>
void poke(StatusPage* p, size_t offset, uint32_t value) {
  const T v = static_cast<T>(value);
  std::memcpy(reinterpret_cast<unsigned char*>(p) + offset, &v, sizeof(v));
}

// One to four changes; returns the size the file should be cut to (0: none).
size_t mutate(StatusPage* p, std::mt19937* rng) {
  const int rounds = 1 + static_cast<int>((*rng)() % 4);
  size_t truncate_to = 0;
  for (int r = 0; r < rounds; ++r) {
    const uint32_t v = nasty_value(rng);
    const uint32_t slot = (*rng)() % 8;  // the used metric slots and a few beyond
    const size_t metric = offsetof(StatusPage, metrics) + slot * sizeof(MetricSlot);
    const size_t op =
        (*rng)() % 2 ? offsetof(StatusPage, oldest_inflight) : offsetof(StatusPage, last_completed);
    switch ((*rng)() % 17) {
      case 0:  // any byte of the page
      case 1:
        poke<uint8_t>(p, (*rng)() % sizeof(StatusPage), (*rng)());
        break;
      case 2:  // any byte of the header and the guarded scalars
        poke<uint8_t>(p, (*rng)() % offsetof(StatusPage, comms), (*rng)());
        break;
      case 3:
        p->ncomms = v;
        break;
      case 4:
        p->nmetrics = v;
        break;
      case 5:
        poke<uint16_t>(p, metric + offsetof(MetricSlot, name), v);
        break;
      case 6:
        poke<uint8_t>(p, metric + offsetof(MetricSlot, dtype) + (*rng)() % 5, v);  // ..transport
        break;
      case 7:
        poke<uint16_t>(p, op + offsetof(OpRef, name), v);
        break;
      case 8:
        poke<uint8_t>(p, op + offsetof(OpRef, kind) + (*rng)() % 2, v);  // kind or dtype
        break;
      case 9:
        p->magic ^= 1ull << ((*rng)() % 64);
        break;
      case 10:
        p->version = v;
        break;
      case 11:
        p->page_bytes = v;
        break;
      case 12:
        if ((*rng)() % 2) {
          p->pid = static_cast<int32_t>(v);
        } else {
          p->rank = static_cast<int32_t>(v);
        }
        break;
      case 13:
        p->seq.store(p->seq.load() | 1);  // a writer that never finishes
        break;
      case 14:
        truncate_to = (*rng)() % sizeof(StatusPage);
        break;
      case 15:
        if ((*rng)() % 2) {
          p->nranges = v;
        } else if ((*rng)() % 2) {
          p->steps.source = v;
        } else {  // a byte of a range name
          poke<uint8_t>(p,
                        offsetof(StatusPage, ranges) + ((*rng)() % 4) * sizeof(RangeSlot) +
                            (*rng)() % kRangeNameBytes,
                        (*rng)());
        }
        break;
      default:  // counters that are no index: always fine
        p->inflight_count = v;
        p->issued_total = static_cast<uint64_t>(v) << 32;
    }
  }
  return truncate_to;
}

class MemFile {
 public:
  MemFile() : fd_(memfd_create("xpu_status_page_mutation", MFD_CLOEXEC)) {}
  ~MemFile() {
    if (fd_ >= 0) close(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

TEST(StatusPageMutation, TenThousandHostilePagesNeverCrashTheReader) {
  MemFile file;
  ASSERT_GE(file.fd(), 0) << "memfd_create: " << std::strerror(errno);
  ASSERT_EQ(ftruncate(file.fd(), sizeof(StatusPage)), 0);
  // The hostile writer's view of the file.
  void* mem = mmap(nullptr, sizeof(StatusPage), PROT_READ | PROT_WRITE, MAP_SHARED, file.fd(), 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* shared = static_cast<StatusPage*>(mem);
  auto pristine = std::make_unique<StatusPage>();
  fill_valid_page(pristine.get());
  auto scratch = std::make_unique<StatusPage>();

  std::memcpy(static_cast<void*>(shared), pristine.get(), sizeof(StatusPage));
  std::string error;
  // Attached to the valid page; the mutations then happen under it.
  auto attached = StatusPageFile::attach_fd(file.fd(), "memfd", getpid(), kPageRank, &error);
  ASSERT_NE(attached, nullptr) << error;

  std::mt19937 rng(20240611);  // fixed: a failure reproduces
  StatusSnapshot snap;
  int accepted = 0, refused = 0, attach_refused = 0;
  size_t cut = 0;
  for (int i = 0; i < kIterations; ++i) {
    if (cut != 0) {  // undo the last round's cut before writing the page again
      ASSERT_EQ(ftruncate(file.fd(), sizeof(StatusPage)), 0);
    }
    std::memcpy(static_cast<void*>(scratch.get()), pristine.get(), sizeof(StatusPage));
    cut = mutate(scratch.get(), &rng);
    std::memcpy(static_cast<void*>(shared), scratch.get(), sizeof(StatusPage));
    if (cut != 0) {
      ASSERT_EQ(ftruncate(file.fd(), static_cast<off_t>(cut)), 0);
    }

    // The page changed under an existing mapping.
    if (attached->read(&snap)) {
      ++accepted;
      ASSERT_TRUE(snapshot_in_range(snap)) << "iteration " << i;
    } else {
      ++refused;
      ASSERT_FALSE(snap.error().empty()) << "iteration " << i;
      ASSERT_FALSE(snap.page_ok());
    }
    // And a fresh attach of the changed file.
    error.clear();
    auto fresh = StatusPageFile::attach_fd(file.fd(), "memfd", getpid(), kPageRank, &error);
    if (fresh == nullptr) {
      ++attach_refused;
      ASSERT_EQ(error.rfind("status page memfd: ", 0), 0u) << "iteration " << i << ": " << error;
    } else if (fresh->read(&snap)) {
      ASSERT_TRUE(snapshot_in_range(snap)) << "iteration " << i;
    } else {
      ASSERT_FALSE(snap.error().empty()) << "iteration " << i;
    }
  }
  munmap(mem, sizeof(StatusPage));
  // Both outcomes are exercised often.
  EXPECT_GT(accepted, kIterations / 10);
  EXPECT_GT(refused, kIterations / 4);
  EXPECT_GT(attach_refused, kIterations / 10);
}

}  // namespace
}  // namespace xpu_timer::proto
