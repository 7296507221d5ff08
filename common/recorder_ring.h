// The flight recorder: a ring of a rank's most recent operations in a shared
// memory file, <run dir>/rank-<RANK>-<pid>.ring, next to its status page.
// docs/architecture.md ("Flight recorder and timeline") describes the format
// and its version rule.
//
// Writer: the rank's background thread (inject's Poller) only. Every record
// the hooks publish (timed, sampled out, failed) is appended once when the
// Poller drains it, then updated in place when it starts running and when it
// completes. The training thread itself never touches the ring.
//
// Reader: the supervisor, another process, at any time and without the
// rank's cooperation (the rank may be stopped by ptrace, hung in a host call,
// or dead: the file outlives it while the supervisor holds a mapping). The
// other side is hostile: any byte of the mapping may change at any moment,
// the file may be truncated, and every value read is validated before use.
//
// Per-record seqlock: a record at ring position `pos` carries
// `version` = pos * kVersionStride + w, where w counts the writes of that
// position: odd while one is in progress, even (and > 0) once stable. Each
// append or update adds 1 before and 1 after writing, so even an in-place
// update changes the version. A reader that expects position `pos` accepts a
// copy only when the version named `pos`, was even, and was the same before
// and after copying: a torn record and an overwritten one (a later position)
// are skipped, never misread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "common/code_frame.h"
#include "common/op_names.h"
#include "common/rank_identity.h"
#include "common/status_page_layout.h"

namespace xpu_timer::recorder {

constexpr uint64_t kRingMagic = 0x474e495254555058ull;  // "XPUTRING" little endian
// 2: the names region after the records (NVTX range names); version 1 rings
// and dumps (no names) are still read.
// 3: RecordData::gemm_ops (a GEMM's transposes) in what was padding; a
// version 1 or 2 record reads with gemm_ops 0 (unknown).
// 4: the call sites region after the names (the Python line that issued a
// collective, inject/call_sites.h), indexed by an NCCL record's `m`
// (call_site_of()); older records have none.
constexpr uint32_t kRingVersion = 4;
// The names region: kRingNames entries of kRingNameBytes (printable ASCII,
// NUL-terminated), indexed by a range record's `seq` (its name id), so that
// a dump names its ranges without the rank. Written once per name, before
// RingHeader::names counts it.
constexpr uint32_t kRingNames = proto::kMaxRanges;
constexpr uint32_t kRingNameBytes = proto::kRangeNameBytes;
// The call sites region (version 4): kRingSites entries, each written once,
// before RingHeader::sites counts it.
constexpr uint32_t kRingSites = 256;
struct SiteEntry {
  int32_t line = 0;  // 0: unknown
  uint32_t reserved = 0;
  char function[56] = {};  // printable ASCII, NUL-terminated
  char file[192] = {};     // printable ASCII, NUL-terminated; a longer path keeps its end
};
static_assert(sizeof(SiteEntry) == 256 && std::is_trivially_copyable_v<SiteEntry>);
constexpr uint32_t kRingSiteBytes = sizeof(SiteEntry);
constexpr uint32_t kDefaultCapacity = 4096;  // records: XPU_TIMER_RECORDER_SIZE's default
constexpr uint32_t kMaxCapacity = 1u << 20;
constexpr uint64_t kVersionStride = 1u << 16;  // writes of one position, at most

// Lifecycle of an operation as the recorder knows it. Append only.
enum class OpState : uint8_t {
  kIssued = 1,     // the host call was made; nothing ran yet as far as we know
  kRunning = 2,    // the previous work on its stream finished: it could start
  kCompleted = 3,  // its end event completed
  kFailed = 4,     // the call failed or was never launched
  kUntimed = 5,    // sampled out of timing (no CUDA event): launched, end unknown
};
const char* op_state_str(uint8_t state);

// Record::flags
constexpr uint8_t kRecTimed = 1;  // gpu_start_ns and gpu_end_ns are GPU times
// Not timed: a collective's two markers only. gpu_end_ns is its end and
// gpu_start_ns (when known) its start marker's GPU time, the rank's arrival
// at the collective; their difference is no duration of the rank's own work.
constexpr uint8_t kRecEndOnly = 2;
constexpr uint8_t kRecGroup = 4;  // an ncclGroupStart/End block of group_size operations
// A host-side region (kind proto::OpKind::kRange): host_start_ns..host_end_ns
// are its start and end, `seq` its name id (the names region), `peer` its
// nesting depth (-1: a start/end range), `stream` the thread id.
constexpr uint8_t kRecHost = 8;
// A step (OpName::kStep) whose GPU idle time was measured
// (inject/step_bubbles.h): `bytes` = GPU busy ns within it, `count` = GEMMs
// and copies in it without a timing. A launch sample (OpName::kKernelLaunches,
// `count` = kernels launched over its interval) that also measured the time
// the rank's host blocked on its GPU over it (inject/host_blocked.h):
// `bytes` = those ns (a sample without the flag, from an older library, did
// not measure them).
constexpr uint8_t kRecMeasured = 16;

// One operation. All times are CLOCK_MONOTONIC nanoseconds of the rank's host
// (the GPU's are mapped onto it, see inject/gpu_clock.h); 0 = unknown.
struct RecordData {
  uint16_t name = 0;   // proto::OpName
  uint8_t kind = 0;    // proto::OpKind
  uint8_t dtype = 0;   // proto::DType
  uint8_t state = 0;   // OpState
  uint8_t flags = 0;   // kRec*
  uint8_t red_op = 0;  // NCCL: ncclRedOp_t + 1 (0 = none or unknown)
  // GEMM (version 3): op(A) and op(B), each cublasOperation_t + 1 (0 =
  // unknown), A's in the low nibble: what a replay needs to run the same
  // kernel (gemm_op_a/gemm_op_b below).
  uint8_t gemm_ops = 0;
  int32_t device = -1;
  int32_t peer = -1;        // NCCL: root (Broadcast/Reduce) or peer (Send/Recv); -1 otherwise
  uint32_t nranks = 0;      // NCCL: communicator size
  uint32_t group_size = 1;  // operations in a group, else 1
  uint64_t stream = 0;      // cudaStream_t as a number: a track key only
  uint64_t comm_hash = 0;   // NCCL: identical on every rank of the communicator
  uint64_t seq = 0;         // NCCL: per-communicator sequence number (1-based)
  uint64_t count = 0;       // NCCL: element count as passed to NCCL
  uint64_t bytes = 0;       // NCCL: payload bytes of this rank
  uint64_t flops = 0;       // GEMM: 2*m*n*k*batch
  // GEMM shape (0 = unknown). NCCL (version 4): `m` is the call site's
  // index + 1 (0 = none), see call_site_of().
  uint32_t m = 0, n = 0, k = 0, batch = 0;
  uint64_t launch_ns = 0;                   // host call
  uint64_t ready_ns = 0;                    // seen able to run (previous work on its stream done)
  // Where the record's span starts and ends: an operation's GPU work, or a
  // host range's own start and end (is_host_range(); the layout is that of
  // every version, one slot for either). Read the member the kind names.
  union {
    uint64_t gpu_start_ns = 0;  // kRecTimed, or kRecEndOnly's arrival
    uint64_t host_start_ns;     // a host range
  };
  union {
    uint64_t gpu_end_ns = 0;  // kRecTimed or kRecEndOnly, once completed
    uint64_t host_end_ns;     // a host range
  };
  uint64_t op_id = 0;  // ring position (== version / kVersionStride when stable)
};
static_assert(std::is_standard_layout_v<RecordData> && std::is_trivially_copyable_v<RecordData>);
static_assert(sizeof(RecordData) == 128, "the record layout is part of the ring and dump formats");
static_assert(offsetof(RecordData, launch_ns) == 88);
static_assert(offsetof(RecordData, gpu_start_ns) == 104 &&
              offsetof(RecordData, host_start_ns) == 104 &&
              offsetof(RecordData, gpu_end_ns) == 112 && offsetof(RecordData, host_end_ns) == 112);
static_assert(offsetof(RecordData, gemm_ops) == 7 && offsetof(RecordData, device) == 8);

// RecordData::gemm_ops from two cublasOperation_t values (N = 0, T = 1,
// C = 2; anything else is unknown), and back: -1 = unknown.
inline uint8_t gemm_ops_of(int op_a, int op_b) {
  auto nibble = [](int op) {
    return op >= 0 && op <= 2 ? static_cast<uint8_t>(op + 1) : uint8_t{0};
  };
  return static_cast<uint8_t>(nibble(op_a) | (nibble(op_b) << 4));
}
inline int gemm_op_a(uint8_t ops) {
  return (ops & 15) >= 1 && (ops & 15) <= 3 ? (ops & 15) - 1 : -1;
}
inline int gemm_op_b(uint8_t ops) {
  return (ops >> 4) >= 1 && (ops >> 4) <= 3 ? (ops >> 4) - 1 : -1;
}

// A host-side region (NVTX range, step, GC pause, ...): its span is
// host_start_ns..host_end_ns, not GPU times.
inline bool is_host_range(const RecordData& d) {
  return d.kind == static_cast<uint8_t>(proto::OpKind::kRange);
}
// When the record's span ended, on whichever side it ran (0: not yet, or
// unknown).
inline uint64_t span_end_ns(const RecordData& d) {
  return is_host_range(d) ? d.host_end_ns : d.gpu_end_ns;
}

// Whether the record holds a GPU span its events timed: start and end on the
// GPU's clock, the end after the start (a sampled-out or end-only record has
// none).
inline bool has_timed_gpu_span(const RecordData& d) {
  return (d.flags & kRecTimed) != 0 && d.gpu_start_ns != 0 && d.gpu_end_ns > d.gpu_start_ns;
}

// The index of an NCCL record's call site in the sites region, -1 = none.
inline int call_site_of(const RecordData& d) {
  return d.kind == static_cast<uint8_t>(proto::OpKind::kNccl) && d.m >= 1 && d.m <= kRingSites
             ? static_cast<int>(d.m) - 1
             : -1;
}
// RecordData::m / OpRecord::m of an NCCL operation issued at site `id` (-1: none).
inline uint32_t call_site_field(int id) {
  return id >= 0 && id < static_cast<int>(kRingSites) ? static_cast<uint32_t>(id) + 1 : 0;
}

// A record as it lies in the ring: the seqlock word above, then the fields.
struct Record {
  std::atomic<uint64_t> version;
  RecordData data;
};
static_assert(std::is_standard_layout_v<Record>);
static_assert(sizeof(Record) == 136 && offsetof(Record, data) == 8);

struct RingHeader {
  uint64_t magic;  // kRingMagic, stored last at creation
  uint32_t version;
  uint32_t header_bytes;  // sizeof(RingHeader)
  uint32_t record_bytes;  // sizeof(Record)
  uint32_t capacity;      // records, a power of two
  int32_t pid;
  int32_t rank;
  int32_t local_rank;
  int32_t world_size;
  uint64_t created_mono_ns;      // one instant on both clocks: maps the
  uint64_t created_realtime_ns;  // monotonic times to wall-clock time
  std::atomic<uint64_t> head;    // records ever appended (the next position)
  uint32_t name_bytes;           // version 2: kRingNameBytes
  uint32_t max_names;            // version 2: entries of the names region
  std::atomic<uint64_t> names;   // version 2: entries written (release after their bytes)
  uint32_t site_bytes;           // version 4: kRingSiteBytes
  uint32_t max_sites;            // version 4: entries of the sites region
  std::atomic<uint64_t> sites;   // version 4: entries written (release after their bytes)
};
static_assert(std::is_standard_layout_v<RingHeader>);
static_assert(sizeof(RingHeader) == 96);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

inline size_t ring_records_bytes(uint32_t capacity) {
  return sizeof(RingHeader) + static_cast<size_t>(capacity) * sizeof(Record);
}
inline size_t ring_names_bytes() { return static_cast<size_t>(kRingNames) * kRingNameBytes; }
inline size_t ring_sites_offset(uint32_t capacity) {
  return ring_records_bytes(capacity) + ring_names_bytes();
}
inline size_t ring_file_bytes(uint32_t capacity) {
  return ring_sites_offset(capacity) + static_cast<size_t>(kRingSites) * kRingSiteBytes;
}
// <dir>/rank-<rank>-<pid>.ring: where a rank's ring lives, beside its status
// page (the supervisor derives it from the page's path at registration).
std::string ring_path(const std::string& dir, int rank, int pid);

// The ring's capacity for `requested` records (XPU_TIMER_RECORDER_SIZE, read
// by inject/settings.h): rounded up to a power of two, at least 16, at most
// kMaxCapacity; 0 or less: no ring (0).
uint32_t capacity_for(int64_t requested);

// The rank's side. create() in Runtime initialisation, then the Poller alone
// appends and updates. Never allocates after create(), never blocks.
class RingWriter {
 public:
  RingWriter() = default;
  ~RingWriter();
  RingWriter(const RingWriter&) = delete;
  RingWriter& operator=(const RingWriter&) = delete;

  // Creates <run_dir>/rank-<id.rank>-<pid>.ring. False with one log line.
  // The header keeps rank, local rank and world size of `id`.
  bool create(const char* run_dir, const RankIdentity& id, int pid, uint32_t capacity);
  bool ok() const { return ring_ != nullptr; }
  const char* path() const { return path_; }

  // Appends a record and returns its position.
  uint64_t append(const RecordData& d);
  // Rewrites the record at `pos` if it has not been overwritten since.
  void update(uint64_t pos, const RecordData& d);
  // Names entry `id` (ids are set in order 0, 1, 2...; one beyond the next
  // is ignored, as is an id >= kRingNames). Cut to kRingNameBytes - 1.
  void set_name(uint32_t id, const char* name);
  // Call site entry `id`, under the same rule as names (ids in order, each once).
  void set_site(uint32_t id, const SiteEntry& site);
  void unlink_file();

 private:
  void write_at(uint64_t pos, const RecordData& d);
  RingHeader* header_ = nullptr;
  Record* ring_ = nullptr;
  uint64_t mask_ = 0;
  size_t bytes_ = 0;
  bool unlinked_ = false;
  char* names_ = nullptr;
  SiteEntry* sites_ = nullptr;
  char path_[256] = {};
};

// What a reader got from a ring: the header's identity and the stable
// records, oldest first.
struct RingSnapshot {
  int32_t pid = 0;
  int32_t rank = -1;
  int32_t local_rank = -1;
  int32_t world_size = 0;
  uint32_t capacity = 0;
  uint64_t created_mono_ns = 0;
  uint64_t created_realtime_ns = 0;
  uint64_t head = 0;                    // records ever appended
  uint64_t skipped = 0;                 // positions in the window that were torn or overwritten
  uint64_t first_skipped = UINT64_MAX;  // the lowest of them (UINT64_MAX: none)
  std::vector<RecordData> records;
  // The names region (range records' `seq` indexes it), cleaned: printable
  // ASCII only. Empty for a version 1 ring.
  std::vector<std::string> names;
  // The call sites region (call_site_of() indexes it), cleaned likewise
  // (python = true, the file as the rank's interpreter named it). Empty
  // before version 4.
  std::vector<CodeFrame> sites;
};
// The call site of a collective record of `s`, nullptr when none.
const CodeFrame* call_site(const RingSnapshot& s, const RecordData& d);
// A site as the region holds it: text cut to its fields (a path keeps its end).
SiteEntry site_entry(const CodeFrame& f);

// The supervisor's side: a read-only mapping of a ring file (RAII).
class RingReader {
 public:
  // Maps and validates the header (magic, version, sizes, capacity against
  // the file size, pid and rank when >= 0). nullptr with a one-line error.
  static std::unique_ptr<RingReader> attach(const std::string& path, int expected_pid,
                                            int expected_rank, std::string* error);
  ~RingReader();
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;

  // Copies every stable record of the current window at positions >= `from`
  // (0: the whole window). False (with `error`) when the mapping faulted
  // (file truncated) or the header changed.
  bool read(RingSnapshot* out, std::string* error, uint64_t from = 0) const;
  const std::string& path() const { return path_; }

  // The same, on a ring image already in this process's memory (a dump
  // being written, a test, a fuzzer): `bytes` is the image's size.
  static bool read_image(const void* image, size_t bytes, RingSnapshot* out, std::string* error);

 private:
  RingReader(const void* map, size_t bytes, std::string path)
      : map_(map), bytes_(bytes), path_(std::move(path)) {}
  const void* map_;
  size_t bytes_;
  std::string path_;
};

// A dump file: a frozen ring image (the same layout, so one reader serves the
// live ring, the dump and the fuzzer) holding `s.records` in order, with
// capacity the next power of two and head = their count. Written to a
// temporary name and renamed, so a reader never sees half a dump. Dumps are
// named RRRRR-WWWWW.timeline (rank and world size, five digits each).
bool write_ring_image(const std::string& path, const RingSnapshot& s, std::string* error);
// The image such a file holds, built in memory (8-byte aligned, as the reader
// wants): read back with RingReader::read_image it is exactly what a reader
// of the file gets, so a trace converted from it equals one from the file.
struct RingImage {
  std::vector<uint64_t> words;
  size_t bytes = 0;
  const char* data() const { return reinterpret_cast<const char*>(words.data()); }
};
RingImage ring_image(const RingSnapshot& s);
bool write_ring_image(const std::string& path, const RingImage& image, std::string* error);
std::string dump_file_name(int rank, int world_size);

// Copies between a record in the ring and a plain one; the version word is
// the caller's (the seqlock above).
inline void to_data(const Record& r, RecordData* out) { *out = r.data; }
inline void from_data(const RecordData& d, Record* out) { out->data = d; }

}  // namespace xpu_timer::recorder
