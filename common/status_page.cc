#include "common/status_page.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "common/mapped_read_guard.h"
#include "common/op_names.h"
#include "common/rank_messages.h"
#include "common/unique_fd.h"

namespace xpu_timer::proto {

// ---- ABI: the page is shared by two separately built binaries ----
// A change to any of these numbers is a layout change: bump kStatusPageVersion.
static_assert(sizeof(OpRef) == 56 && alignof(OpRef) == 8);
static_assert(offsetof(OpRef, name) == 0 && offsetof(OpRef, kind) == 2 &&
              offsetof(OpRef, dtype) == 3 && offsetof(OpRef, group_size) == 4 &&
              offsetof(OpRef, comm_hash) == 8 && offsetof(OpRef, seq) == 16 &&
              offsetof(OpRef, launch_ns) == 24 && offsetof(OpRef, started_ns) == 32 &&
              offsetof(OpRef, bytes) == 40 && offsetof(OpRef, flops) == 48);
static_assert(sizeof(CommSlot) == 72 && alignof(CommSlot) == 8 && kCommNameBytes == 32);
static_assert(offsetof(CommSlot, comm_hash) == 0 && offsetof(CommSlot, nranks) == 8 &&
              offsetof(CommSlot, rank) == 12 && offsetof(CommSlot, issued_seq) == 16 &&
              offsetof(CommSlot, completed_seq) == 24 && offsetof(CommSlot, flags) == 32 &&
              offsetof(CommSlot, reserved) == 36 && offsetof(CommSlot, name) == 40);
static_assert(sizeof(MetricSlot) == 272 && alignof(MetricSlot) == 8);
static_assert(offsetof(MetricSlot, name) == 0 && offsetof(MetricSlot, dtype) == 2 &&
              offsetof(MetricSlot, size_bucket) == 3 && offsetof(MetricSlot, algo) == 4 &&
              offsetof(MetricSlot, proto) == 5 && offsetof(MetricSlot, transport) == 6 &&
              offsetof(MetricSlot, reserved) == 7 && offsetof(MetricSlot, nranks) == 8 &&
              offsetof(MetricSlot, nchannels) == 12 && offsetof(MetricSlot, count) == 16 &&
              offsetof(MetricSlot, sum_ns) == 24 && offsetof(MetricSlot, sum_bytes) == 32 &&
              offsetof(MetricSlot, sum_flops) == 40 && offsetof(MetricSlot, last_update_ns) == 48 &&
              offsetof(MetricSlot, hist) == 56 && offsetof(MetricSlot, untimed_count) == 248 &&
              offsetof(MetricSlot, untimed_bytes) == 256 &&
              offsetof(MetricSlot, untimed_flops) == 264);
static_assert(sizeof(StatusPage) == 74632 + 16 + 64 * 264 + 272 + 32 && alignof(StatusPage) == 8);
static_assert(sizeof(PythonCounters) == 96 &&
              offsetof(StatusPage, python) ==
                  offsetof(StatusPage, runtime) + sizeof(RuntimeCounters));
static_assert(sizeof(RuntimeCounters) == 48 &&
              offsetof(StatusPage, runtime) ==
                  offsetof(StatusPage, metrics) + kMaxMetrics * sizeof(MetricSlot));
static_assert(offsetof(StatusPage, magic) == 0 && offsetof(StatusPage, version) == 8 &&
              offsetof(StatusPage, page_bytes) == 12 && offsetof(StatusPage, pid) == 16 &&
              offsetof(StatusPage, rank) == 20 && offsetof(StatusPage, local_rank) == 24 &&
              offsetof(StatusPage, world_size) == 28 &&
              offsetof(StatusPage, local_world_size) == 32 &&
              offsetof(StatusPage, group_rank) == 36 &&
              offsetof(StatusPage, created_mono_ns) == 40 &&
              offsetof(StatusPage, created_realtime_ns) == 48);
static_assert(offsetof(StatusPage, heartbeat_ns) == 56 && offsetof(StatusPage, seq) == 64 &&
              sizeof(std::atomic<uint64_t>) == 8);
static_assert(offsetof(StatusPage, issued_total) == 72 &&
              offsetof(StatusPage, completed_total) == 80 &&
              offsetof(StatusPage, inflight_count) == 88 && offsetof(StatusPage, ncomms) == 92 &&
              offsetof(StatusPage, oldest_inflight) == 96 &&
              offsetof(StatusPage, last_completed) == 152 &&
              offsetof(StatusPage, dropped_queue_full) == 208 &&
              offsetof(StatusPage, skipped_capture) == 216 &&
              offsetof(StatusPage, hook_errors) == 224 &&
              offsetof(StatusPage, queue_depth) == 232 && offsetof(StatusPage, comms) == 240 &&
              offsetof(StatusPage, nmetrics) == 4848 && offsetof(StatusPage, flags) == 4852 &&
              offsetof(StatusPage, metrics) == 4856);
static_assert(sizeof(RangeSlot) == 264 && offsetof(RangeSlot, kind) == 48 &&
              offsetof(RangeSlot, count) == 56 && offsetof(RangeSlot, hist) == 72 &&
              kRangeNameBytes == 48 && kMaxRanges == 64);
static_assert(sizeof(StepCounters) == 272 && offsetof(StepCounters, steps) == 8 &&
              offsetof(StepCounters, hist) == 32 && offsetof(StepCounters, measured) == 224);
static_assert(offsetof(StatusPage, nranges) ==
                  offsetof(StatusPage, python) + sizeof(PythonCounters) &&
              offsetof(StatusPage, ranges_dropped) == offsetof(StatusPage, nranges) + 8 &&
              offsetof(StatusPage, ranges) == offsetof(StatusPage, nranges) + 16 &&
              offsetof(StatusPage, steps) ==
                  offsetof(StatusPage, ranges) + kMaxRanges * sizeof(RangeSlot));
static_assert(sizeof(SelfCost) == 32 &&
              offsetof(StatusPage, self) == offsetof(StatusPage, steps) + sizeof(StepCounters));
static_assert(kMaxComms == 64 && kMaxMetrics == 256 && kHistBuckets == 24);

namespace {

// Retries of the seqlock copy before a read counts as busy.
constexpr int kReadAttempts = 64;
// The part of the page written once, before the magic.
constexpr size_t kHeaderBytes = offsetof(StatusPage, heartbeat_ns);

bool fail_with(std::string* error, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
bool fail_with(std::string* error, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (error != nullptr) *error = buf;
  return false;
}

// Whether a raw value is one this build names. Switches without a default:
// -Wswitch (an error here) flags an enumerator added to op_names.h or
// status_page_layout.h but not here.
bool known(OpName v) {
  switch (v) {
    case OpName::kUnknown:
    case OpName::kGemmEx:
    case OpName::kGemmStridedBatchedEx:
    case OpName::kSgemm:
    case OpName::kHgemm:
    case OpName::kSgemmStridedBatched:
    case OpName::kHgemmStridedBatched:
    case OpName::kLtMatmul:
    case OpName::kAllReduce:
    case OpName::kAllGather:
    case OpName::kReduceScatter:
    case OpName::kBroadcast:
    case OpName::kReduce:
    case OpName::kSend:
    case OpName::kRecv:
    case OpName::kGroup:
    case OpName::kMemcpyH2D:
    case OpName::kMemcpyD2H:
    case OpName::kMemcpyD2D:
    case OpName::kMemcpyOther:
    case OpName::kMemcpyPeer:
    case OpName::kNvtxRange:
    case OpName::kStep:
    case OpName::kGcPause:
    case OpName::kLoaderWait:
    case OpName::kDeviceMalloc:
    case OpName::kDeviceFree:
    case OpName::kKernelLaunches:
    case OpName::kPythonCall:
      return true;
  }
  return false;
}

bool known(OpKind v) {
  switch (v) {
    case OpKind::kNone:
    case OpKind::kGemm:
    case OpKind::kNccl:
    case OpKind::kMemcpy:
    case OpKind::kRange:
      return true;
  }
  return false;
}

bool known(DType v) {
  switch (v) {
    case DType::kUnknown:
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF64:
    case DType::kF8E4M3:
    case DType::kF8E5M2:
    case DType::kI8:
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
    case DType::kTF32:
      return true;
  }
  return false;
}

bool known(NcclAlgo v) {
  switch (v) {
    case NcclAlgo::kUnknown:
    case NcclAlgo::kTree:
    case NcclAlgo::kRing:
    case NcclAlgo::kCollNetDirect:
    case NcclAlgo::kCollNetChain:
    case NcclAlgo::kNvls:
    case NcclAlgo::kNvlsTree:
    case NcclAlgo::kPat:
    case NcclAlgo::kOther:
    case NcclAlgo::kMixed:
      return true;
  }
  return false;
}

bool known(NcclProto v) {
  switch (v) {
    case NcclProto::kUnknown:
    case NcclProto::kLL:
    case NcclProto::kLL128:
    case NcclProto::kSimple:
    case NcclProto::kOther:
    case NcclProto::kMixed:
      return true;
  }
  return false;
}

bool known(NcclTransport v) {
  switch (v) {
    case NcclTransport::kUnknown:
    case NcclTransport::kIntraNode:
    case NcclTransport::kInterNode:
      return true;
  }
  return false;
}

// The header checks of attach(), shared with read() (a header that changed).
bool header_ok(uint64_t magic, uint32_t version, uint32_t page_bytes, int32_t pid, int32_t rank,
               int32_t expected_pid, int32_t expected_rank, std::string* why) {
  if (magic != kStatusPageMagic) return fail_with(why, "bad magic");
  if (version != kStatusPageVersion) {
    return fail_with(why,
                     "protocol version %u, supervisor speaks %u (stale libxpu_timer_inject.so?)",
                     version, kStatusPageVersion);
  }
  if (page_bytes != sizeof(StatusPage)) {
    return fail_with(why, "page_bytes %u != %zu", page_bytes, sizeof(StatusPage));
  }
  if (pid != expected_pid) {
    return fail_with(why, "pid %d != registered pid %d", pid, expected_pid);
  }
  if (rank != expected_rank) {
    return fail_with(why, "rank %d != registered rank %d", rank, expected_rank);
  }
  return true;
}

bool op_ok(const OpRef& op, const char* which, std::string* why) {
  if (!known(static_cast<OpName>(op.name))) {
    return fail_with(why, "%s.name %u is not an OpName", which, op.name);
  }
  if (!known(static_cast<OpKind>(op.kind))) {
    return fail_with(why, "%s.kind %u is not an OpKind", which, op.kind);
  }
  if (!known(static_cast<DType>(op.dtype))) {
    return fail_with(why, "%s.dtype %u is not a DType", which, op.dtype);
  }
  return true;
}

bool metric_ok(const MetricSlot& m, uint32_t i, std::string* why) {
  if (!known(static_cast<OpName>(m.name))) {
    return fail_with(why, "metrics[%u].name %u is not an OpName", i, m.name);
  }
  if (!known(static_cast<DType>(m.dtype))) {
    return fail_with(why, "metrics[%u].dtype %u is not a DType", i, m.dtype);
  }
  if (!known(static_cast<NcclAlgo>(m.algo))) {
    return fail_with(why, "metrics[%u].algo %u is not an NcclAlgo", i, m.algo);
  }
  if (!known(static_cast<NcclProto>(m.proto))) {
    return fail_with(why, "metrics[%u].proto %u is not an NcclProto", i, m.proto);
  }
  if (!known(static_cast<NcclTransport>(m.transport))) {
    return fail_with(why, "metrics[%u].transport %u is not an NcclTransport", i, m.transport);
  }
  return true;
}

// Checks of the private copy (never of the mapping: see the header).
bool validate(const StatusPage& p, int32_t pid, int32_t rank, std::string* why) {
  std::string header_why;
  if (!header_ok(p.magic, p.version, p.page_bytes, p.pid, p.rank, pid, rank, &header_why)) {
    return fail_with(why, "header changed since attach: %s", header_why.c_str());
  }
  if (p.ncomms > static_cast<uint32_t>(kMaxComms)) {
    return fail_with(why, "ncomms %u > %d", p.ncomms, kMaxComms);
  }
  if (p.nmetrics > static_cast<uint32_t>(kMaxMetrics)) {
    return fail_with(why, "nmetrics %u > %d", p.nmetrics, kMaxMetrics);
  }
  if (p.nranges > static_cast<uint32_t>(kMaxRanges)) {
    return fail_with(why, "nranges %u > %d", p.nranges, kMaxRanges);
  }
  if (p.steps.source > static_cast<uint32_t>(StepSource::kOptimizer)) {
    return fail_with(why, "steps.source %u is not a StepSource", p.steps.source);
  }
  if (!op_ok(p.oldest_inflight, "oldest_inflight", why)) return false;
  if (!op_ok(p.last_completed, "last_completed", why)) return false;
  for (uint32_t i = 0; i < p.nmetrics; ++i) {
    if (!metric_ok(p.metrics[i], i, why)) return false;
  }
  return true;
}

// Names of the private copy, made safe to print (clean_name_field), and range
// kinds made known ones.
void clean_names(StatusPage* p) {
  for (uint32_t i = 0; i < p->ncomms; ++i) clean_name_field(p->comms[i].name, kCommNameBytes);
  for (uint32_t i = 0; i < p->nranges; ++i) {
    clean_name_field(p->ranges[i].name, kRangeNameBytes);
    if (p->ranges[i].kind != static_cast<uint32_t>(RangeKind::kPythonFunction)) {
      p->ranges[i].kind = static_cast<uint32_t>(RangeKind::kNvtx);  // unknown: a plain range
    }
  }
}

// Seqlock reader: copy, then check that seq was even and did not move.
bool seqlock_copy(const StatusPage* page, StatusPage* out) {
  for (int i = 0; i < kReadAttempts; ++i) {
    const uint64_t before = page->seq.load(std::memory_order_acquire);
    if (before & 1) continue;
    std::memcpy(static_cast<void*>(out), static_cast<const void*>(page), sizeof(StatusPage));
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t after = page->seq.load(std::memory_order_relaxed);
    if (before == after) return true;
  }
  return false;
}

}  // namespace

uint64_t heartbeat_age_ns(uint64_t now_ns, uint64_t heartbeat_ns, uint64_t registered_ns) {
  const uint64_t last = heartbeat_ns > registered_ns ? heartbeat_ns : registered_ns;
  return now_ns > last ? now_ns - last : 0;
}

StatusSnapshot::StatusSnapshot() : copy_(std::make_unique<StatusPage>()) {}

void StatusSnapshot::reset() {
  heartbeat_ok_ = false;
  heartbeat_ns_ = 0;
  page_ok_ = false;
  error_.clear();
}

StatusPageFile::StatusPageFile(void* mapping, std::string path, bool owner)
    : mapping_(static_cast<const StatusPage*>(mapping)),
      writable_(owner ? static_cast<StatusPage*>(mapping) : nullptr),
      path_(std::move(path)),
      linked_(owner) {}

StatusPageFile::~StatusPageFile() {
  ::munmap(const_cast<StatusPage*>(mapping_), sizeof(StatusPage));
  unlink();
}

std::unique_ptr<StatusPageFile> StatusPageFile::create(const std::string& run_dir,
                                                       const RankIdentity& id, pid_t pid,
                                                       std::string* error) {
  const std::string path =
      run_dir + "/rank-" + std::to_string(id.rank) + "-" + std::to_string(pid) + ".page";
  // The supervisor learns the path from the RegisterMsg.
  if (path.size() >= sizeof(RegisterMsg::status_path)) {
    fail_with(error, "status page path under %s is longer than %zu bytes", run_dir.c_str(),
              sizeof(RegisterMsg::status_path) - 1);
    return nullptr;
  }
  // A stale file of the same name (pid reuse) may still be mapped by the
  // supervisor: never truncate it (its reader would get SIGBUS), replace it.
  ::unlink(path.c_str());
  // `fd` closes at return: the mapping outlives it.
  const UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) {
    fail_with(error, "open(%s) failed: %s", path.c_str(), std::strerror(errno));
    return nullptr;
  }
  if (::ftruncate(fd.get(), sizeof(StatusPage)) != 0) {
    fail_with(error, "ftruncate(%s) failed: %s", path.c_str(), std::strerror(errno));
    ::unlink(path.c_str());
    return nullptr;
  }
  void* mem = ::mmap(nullptr, sizeof(StatusPage), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (mem == MAP_FAILED) {
    fail_with(error, "mmap(%s) failed: %s", path.c_str(), std::strerror(errno));
    ::unlink(path.c_str());
    return nullptr;
  }
  std::unique_ptr<StatusPageFile> file(new StatusPageFile(mem, path, /*owner=*/true));
  StatusPage* page = file->writable_;  // ftruncate zero-filled it
  page->version = kStatusPageVersion;
  page->page_bytes = sizeof(StatusPage);
  page->pid = pid;
  page->rank = id.rank;
  page->local_rank = id.local_rank;
  page->world_size = id.world_size;
  page->local_world_size = id.local_world_size;
  page->group_rank = id.group_rank;
  page->created_mono_ns = monotonic_ns();
  page->created_realtime_ns = realtime_ns();
  page->heartbeat_ns.store(page->created_mono_ns, std::memory_order_relaxed);
  // Magic last: a reader that sees it sees a complete header.
  std::atomic_thread_fence(std::memory_order_release);
  page->magic = kStatusPageMagic;
  file->pid_ = pid;
  file->rank_ = id.rank;
  return file;
}

std::unique_ptr<StatusPageFile> StatusPageFile::attach(const std::string& path, pid_t expected_pid,
                                                       int expected_rank, std::string* error) {
  // O_NONBLOCK: a FIFO put in the page's place must not block the supervisor.
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    fail_with(error, "status page %s: cannot open: %s", path.c_str(), std::strerror(errno));
    return nullptr;
  }
  return attach_fd(fd.get(), path, expected_pid, expected_rank, error);
}

std::unique_ptr<StatusPageFile> StatusPageFile::attach_fd(int fd, const std::string& path,
                                                          pid_t expected_pid, int expected_rank,
                                                          std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error != nullptr) *error = "status page " + path + ": " + why;
    return nullptr;
  };
  struct stat st;
  if (::fstat(fd, &st) != 0) return fail(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  if (static_cast<uint64_t>(st.st_size) < sizeof(StatusPage)) {
    return fail("too small (" + std::to_string(st.st_size) + " bytes, expected " +
                std::to_string(sizeof(StatusPage)) + ")");
  }
  void* mem = ::mmap(nullptr, sizeof(StatusPage), PROT_READ, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED) return fail(std::string("cannot mmap: ") + std::strerror(errno));
  std::unique_ptr<StatusPageFile> file(new StatusPageFile(mem, path, /*owner=*/false));

  // The file may shrink between fstat and here: copy the header under the guard.
  alignas(StatusPage) unsigned char header[kHeaderBytes];
  if (!common::guarded([&] {
        std::memcpy(header, mem, kHeaderBytes);
        return true;
      })) {
    return fail("truncated while reading");
  }
  auto field = [&](auto* out, size_t offset) { std::memcpy(out, header + offset, sizeof(*out)); };
  uint64_t magic;
  uint32_t version, page_bytes;
  int32_t pid, rank;
  field(&magic, offsetof(StatusPage, magic));
  field(&version, offsetof(StatusPage, version));
  field(&page_bytes, offsetof(StatusPage, page_bytes));
  field(&pid, offsetof(StatusPage, pid));
  field(&rank, offsetof(StatusPage, rank));
  std::string why;
  if (!header_ok(magic, version, page_bytes, pid, rank, expected_pid, expected_rank, &why)) {
    return fail(why);
  }
  file->pid_ = pid;
  file->rank_ = rank;
  return file;
}

void StatusPageFile::begin_write() {
  const uint64_t s = writable_->seq.load(std::memory_order_relaxed);
  writable_->seq.store(s + 1, std::memory_order_relaxed);
  // Orders the odd seq before the data stores that follow.
  std::atomic_thread_fence(std::memory_order_release);
}

void StatusPageFile::end_write() {
  const uint64_t s = writable_->seq.load(std::memory_order_relaxed);
  writable_->seq.store(s + 1, std::memory_order_release);
}

void StatusPageFile::heartbeat(uint64_t now_ns) {
  writable_->heartbeat_ns.store(now_ns, std::memory_order_release);
}

void StatusPageFile::unlink() {
  if (!linked_) return;
  linked_ = false;
  ::unlink(path_.c_str());
}

bool StatusPageFile::read(StatusSnapshot* out) const {
  out->reset();
  const StatusPage* page = mapping_;
  uint64_t beat = 0;
  if (!common::guarded([&] {
        beat = page->heartbeat_ns.load(std::memory_order_acquire);
        return true;
      })) {
    out->error_ = "truncated under the mapping (SIGBUS)";
    return false;
  }
  out->heartbeat_ok_ = true;
  out->heartbeat_ns_ = beat;
  StatusPage* copy = out->copy_.get();
  bool consistent = false;
  if (!common::guarded([&] {
        consistent = seqlock_copy(page, copy);
        return true;
      })) {
    out->error_ = "truncated under the mapping (SIGBUS)";
    return false;
  }
  if (!consistent) {
    fail_with(&out->error_, "busy: the writer held the seqlock through %d attempts", kReadAttempts);
    return false;
  }
  if (!validate(*copy, pid_, rank_, &out->error_)) return false;
  clean_names(copy);
  out->page_ok_ = true;
  return true;
}

}  // namespace xpu_timer::proto
