// The one contract between the injected library (inject/) and the supervisor:
// the per-rank shared-memory status page and the messages on the unix socket.
//
// Versioning: kProtocolVersion is bumped on any layout change. The supervisor
// refuses a page or a message whose magic or version differs (one clear log
// line), so a job launched with a stale libxpu_timer_inject.so keeps training
// and is simply not watched.
//
// Threads: the page is written only by the rank's background thread (inject's
// Poller) and read by the supervisor's poll loop, another process. Fields that
// must be read consistently together are guarded by a seqlock (`seq`): the
// writer makes it odd, writes, makes it even; the reader copies and retries
// while it was odd or changed. Everything in the page is trivially copyable
// and address-free (lock-free 64-bit atomics only), so it may live in memory
// mapped by two processes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace xpu_timer::proto {

constexpr uint32_t kProtocolVersion = 1;
constexpr uint64_t kStatusPageMagic = 0x52454d4954555058ull;  // "XPUTIMER" little endian
constexpr uint32_t kMessageMagic = 0x54555058u;               // "XPUT"

// Environment set by the supervisor for the job. Names of our own that have
// no xpu-timer counterpart start with XPU_TIMER_ too.
constexpr const char* kEnvSocket = "XPU_TIMER_SOCKET";    // unix socket path
constexpr const char* kEnvRunDir = "XPU_TIMER_RUN_DIR";   // where status pages are created
constexpr const char* kEnvDisable = "XPU_TIMER_DISABLE";  // "1": hooks pass through

enum class OpKind : uint8_t { kNone = 0, kGemm = 1, kNccl = 2, kMemcpy = 3 };

// What was called. Values are part of the protocol: append only.
enum class OpName : uint16_t {
  kUnknown = 0,
  // cuBLAS / cuBLASLt
  kGemmEx = 1,
  kGemmStridedBatchedEx = 2,
  kSgemm = 3,
  kHgemm = 4,
  kSgemmStridedBatched = 5,
  kHgemmStridedBatched = 6,
  kLtMatmul = 7,
  // NCCL
  kAllReduce = 32,
  kAllGather = 33,
  kReduceScatter = 34,
  kBroadcast = 35,
  kReduce = 36,
  kSend = 37,
  kRecv = 38,
  kGroup = 39,  // a ncclGroupStart/End block, timed as one operation
  // memory copies
  kMemcpyH2D = 64,
  kMemcpyD2H = 65,
  kMemcpyD2D = 66,
  kMemcpyOther = 67,
};

// Name as shown to users ("AllReduce", "GemmEx", ...). Never null.
const char* op_name_str(OpName name);
OpKind op_kind_of(OpName name);

// Data types, independent of the CUDA enum values so the page stays stable.
enum class DType : uint8_t {
  kUnknown = 0, kF32, kF16, kBF16, kF64, kF8E4M3, kF8E5M2, kI8, kI32, kI64, kU8, kTF32,
};
const char* dtype_str(DType t);

// One operation as the page describes it. POD.
struct OpRef {
  uint16_t name;      // OpName
  uint8_t kind;       // OpKind
  uint8_t dtype;      // DType
  uint32_t group_size;  // operations in a kGroup, else 1
  uint64_t comm_hash;   // NCCL: identical on every rank of the communicator; 0 otherwise
  uint64_t seq;         // NCCL: per-communicator sequence number of this rank (1-based)
  uint64_t launch_ns;   // CLOCK_MONOTONIC when the host call was made
  uint64_t started_ns;  // CLOCK_MONOTONIC when it became the oldest pending op on its stream
  uint64_t bytes;       // NCCL: payload bytes of this rank; GEMM: 0
  uint64_t flops;       // GEMM: 2*b*m*n*k; NCCL: 0
};

constexpr int kMaxComms = 64;
// A communicator this rank is a member of, with its progress. The supervisor
// uses it to tell stuck ranks (issued seq s, not completed) from missing ones
// (never issued seq s on that communicator).
struct CommSlot {
  uint64_t comm_hash;
  int32_t nranks;
  int32_t rank;  // rank inside the communicator
  uint64_t issued_seq;
  uint64_t completed_seq;
};

// Latency histogram: upper bounds in seconds, log-spaced; the last bucket is +Inf.
constexpr int kHistBuckets = 24;
extern const double kHistUpperBoundsSeconds[kHistBuckets];
int hist_bucket_for_ns(uint64_t ns);

constexpr int kMaxMetrics = 256;
// Aggregates of one (name, dtype, size bucket) key, written by the rank's
// background thread only.
struct MetricSlot {
  uint16_t name;  // OpName; 0 = unused slot
  uint8_t dtype;  // DType
  uint8_t size_bucket;  // log2 bucket of bytes (NCCL) or of flops (GEMM)
  uint8_t algo;   // reserved for NCCL algorithm (0 = unknown)
  uint8_t proto;  // reserved for NCCL protocol (0 = unknown)
  uint16_t reserved;
  uint32_t nranks;        // NCCL: communicator size, for bus bandwidth
  uint32_t reserved2;
  uint64_t count;
  uint64_t sum_ns;
  uint64_t sum_bytes;     // NCCL payload bytes
  uint64_t sum_flops;     // GEMM floating point operations
  uint64_t last_update_ns;
  uint64_t hist[kHistBuckets];  // non-cumulative counts per latency bucket
};

// The status page of one rank. Created and sized by the rank (inject) as a
// file under XPU_TIMER_RUN_DIR, mapped read-only by the supervisor.
struct StatusPage {
  // --- immutable after creation ---
  uint64_t magic;
  uint32_t version;
  uint32_t page_bytes;  // sizeof(StatusPage) as the writer saw it
  int32_t pid;
  int32_t rank;
  int32_t local_rank;
  int32_t world_size;
  int32_t local_world_size;
  int32_t group_rank;
  uint64_t created_mono_ns;
  uint64_t created_realtime_ns;

  // --- liveness, read without the seqlock ---
  std::atomic<uint64_t> heartbeat_ns;  // CLOCK_MONOTONIC, refreshed by every poller pass
  std::atomic<uint64_t> seq;           // seqlock for everything below

  // --- guarded by seq ---
  uint64_t issued_total;     // operations pushed by the hooks
  uint64_t completed_total;  // operations whose end event completed
  uint32_t inflight_count;   // ops launched and not completed (all streams)
  uint32_t ncomms;
  OpRef oldest_inflight;     // valid when inflight_count > 0
  OpRef last_completed;      // valid when completed_total > 0
  uint64_t dropped_queue_full;  // records lost because the hot-path queue was full
  uint64_t skipped_capture;     // calls not timed because the stream was capturing a graph
  uint64_t hook_errors;         // calls where our code failed and passed through
  uint64_t queue_depth;         // records waiting for the poller at the last pass
  CommSlot comms[kMaxComms];
  uint32_t nmetrics;
  uint32_t reserved;
  MetricSlot metrics[kMaxMetrics];
};
static_assert(std::is_standard_layout_v<StatusPage>);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// ---- unix socket messages (SOCK_SEQPACKET: one message per packet) ----

enum class MsgType : uint16_t {
  kRegister = 1,  // rank -> supervisor, once, after the status page exists
};

struct MsgHeader {
  uint32_t magic;    // kMessageMagic
  uint16_t version;  // kProtocolVersion
  uint16_t type;     // MsgType
  uint32_t bytes;    // whole message including this header
  uint32_t reserved;
};

struct RegisterMsg {
  MsgHeader header;
  int32_t pid;
  int32_t rank;
  int32_t local_rank;
  int32_t world_size;
  int32_t local_world_size;
  int32_t group_rank;
  char hostname[64];
  char status_path[256];  // NUL-terminated path of the status page file
};
static_assert(std::is_trivially_copyable_v<RegisterMsg>);

// Seqlock read of the guarded part of a page into `out` (a private copy).
// Returns false when the writer kept it busy for all attempts.
bool read_status_page(const StatusPage* page, StatusPage* out, int attempts = 64);

}  // namespace xpu_timer::proto
