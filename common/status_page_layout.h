// The layout of a rank's status page: the shared memory between the injected
// library (inject/) and the supervisor. Its one owner, which creates, maps,
// reads and validates it, is StatusPageFile (common/status_page.h); this
// header only says what the bytes are.
//
// Versioning: kStatusPageVersion versions this layout and nothing else; it is
// bumped on any change to a struct below (the offsets are pinned in
// status_page.cc). The socket messages carry their own version
// (common/rank_messages.h). Enum values stored here (OpName, DType, NcclAlgo,
// ...; common/op_names.h) are append-only and need no bump. The supervisor
// refuses a page whose magic or version differs (one clear log line), so a
// job launched with a stale libxpu_timer_inject.so keeps training and is
// simply not watched.
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

// Version 9: RangeSlot::kind. (Until the split of common/protocol.h the page
// and the socket messages shared one version number; both continue from 9.)
constexpr uint32_t kStatusPageVersion = 9;
constexpr uint64_t kStatusPageMagic = 0x52454d4954555058ull;  // "XPUTIMER" little endian

// A fixed-size name field written by another process (a communicator or
// range name), made safe to print in place: without a NUL in its `bytes` it
// is "" (unknown), bytes a writer should not have put there become '?', and
// the bytes after the NUL are zeroed. Returns the name's length. The
// flight-recorder ring's reader cleans its names the same way.
size_t clean_name_field(char* name, size_t bytes);

// One operation as the page describes it. POD.
struct OpRef {
  uint16_t name;        // OpName
  uint8_t kind;         // OpKind
  uint8_t dtype;        // DType
  uint32_t group_size;  // operations in a kGroup, else 1
  uint64_t comm_hash;   // NCCL: identical on every rank of the communicator; 0 otherwise
  uint64_t seq;         // NCCL: per-communicator sequence number of this rank (1-based)
  uint64_t launch_ns;   // CLOCK_MONOTONIC when the host call was made
  // CLOCK_MONOTONIC when its start marker (an event recorded just before it)
  // was seen complete: the work before it on its stream had finished and it
  // could run. 0: not yet (queued), or never known (a sampled-out GEMM). The
  // origin of its hang clock (docs/architecture.md "Hang detection").
  uint64_t started_ns;
  uint64_t bytes;  // NCCL: payload bytes of this rank; GEMM: 0
  uint64_t flops;  // GEMM: 2*b*m*n*k; NCCL: 0
};

constexpr int kMaxComms = 64;
// CommSlot::flags
// The rank saw the communicator first in a collective (created before the
// hooks started): its comm_hash is local to this rank, not shared with the
// other members, so it must not be matched across ranks.
constexpr uint32_t kCommFlagUnknownIdentity = 1;

// CommSlot::name bytes, the NUL included.
constexpr size_t kCommNameBytes = 32;

// A communicator this rank is a member of, with its progress. The supervisor
// uses it to tell stuck ranks (issued seq s, not completed) from missing ones
// (never issued seq s on that communicator).
struct CommSlot {
  uint64_t comm_hash;
  int32_t nranks;
  int32_t rank;  // rank inside the communicator
  uint64_t issued_seq;
  uint64_t completed_seq;
  uint32_t flags;  // kCommFlag*
  uint32_t reserved;
  // The name the program gave the communicator (NCCL >= 2.27 commName, e.g.
  // a framework's group name), printable ASCII, NUL-terminated; "" =
  // unknown. The reader treats a name without a NUL as "" (status_page.cc).
  char name[kCommNameBytes];
};

// Latency histogram: upper bounds in seconds, log-spaced; the last bucket is +Inf.
constexpr int kHistBuckets = 24;
extern const double kHistUpperBoundsSeconds[kHistBuckets];
int hist_bucket_for_ns(uint64_t ns);

// floor(log2(x)), 0 for x == 0: the size_bucket of a metric key (of bytes
// for NCCL and copies, of flops for GEMMs), wherever a series is keyed by it.
constexpr uint8_t log2_bucket(uint64_t x) {
  return x == 0 ? 0 : static_cast<uint8_t>(63 - __builtin_clzll(x));
}

constexpr int kMaxMetrics = 256;
// Aggregates of one (name, dtype, size bucket) key, written by the rank's
// background thread only.
struct MetricSlot {
  uint16_t name;        // OpName; 0 = unused slot
  uint8_t dtype;        // DType
  uint8_t size_bucket;  // log2 bucket of bytes (NCCL) or of flops (GEMM)
  uint8_t algo;         // NcclAlgo, from NCCL's profiler plugin (0 = unknown)
  uint8_t proto;        // NcclProto, from NCCL's profiler plugin (0 = unknown)
  uint8_t transport;    // NcclTransport (0 = unknown)
  uint8_t reserved;
  uint32_t nranks;     // NCCL: communicator size, for bus bandwidth
  uint32_t nchannels;  // NCCL: channels of the latest operation (0 = unknown)
  uint64_t count;
  uint64_t sum_ns;
  uint64_t sum_bytes;  // NCCL payload bytes
  uint64_t sum_flops;  // GEMM floating point operations
  uint64_t last_update_ns;
  uint64_t hist[kHistBuckets];  // non-cumulative counts per latency bucket
  // Calls completed without a timing (docs/architecture.md "The hot path", 4):
  // count, sum_* and hist above cover the timed calls only, so that their
  // ratios (FLOP/s, bandwidth, latency) stay exact; these add the rest.
  uint64_t untimed_count;
  uint64_t untimed_bytes;
  uint64_t untimed_flops;
};

// CUDA runtime calls of a rank that are counted, not timed (inject/hooks_cudart.cc):
// every call through the application's libcudart. Work that a library launches
// through its own statically linked runtime (cuBLAS, NCCL) or through the
// driver API (Triton, PyTorch's expandable segments) is not seen.
struct RuntimeCounters {
  uint64_t kernel_launches;  // cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel
  uint64_t mallocs;          // successful cudaMalloc, cudaMallocAsync, cudaMallocFromPoolAsync
  uint64_t malloc_bytes;
  uint64_t frees;       // successful cudaFree, cudaFreeAsync of a pointer not null
  uint64_t free_bytes;  // of the frees whose allocation we saw
  // The time the rank's host blocked on its GPU (inject/host_blocked.h):
  // synchronisations, copies to the host, launches into a full queue (one in
  // 16 timed). 0 from a library before it (the slot was reserved).
  uint64_t host_blocked_ns;
};

// What the rank's Python interpreter did (inject/python_probes.py), counted
// on every event; all zero in a process that is not Python.
constexpr uint32_t kPythonProbeGc = 1;          // gc.callbacks installed
constexpr uint32_t kPythonProbeDataLoader = 2;  // the DataLoader iterator is timed
constexpr uint32_t kPythonProbeOptimizer = 4;   // optimizer steps mark training steps
struct PythonCounters {
  uint32_t probes;  // kPythonProbe*
  uint32_t reserved;
  uint64_t gc_collections[3];  // per generation
  uint64_t gc_pause_ns[3];     // time inside those collections
  uint64_t gc_collected[3];    // objects they freed
  uint64_t loader_batches;     // batches the DataLoader iterator returned
  uint64_t loader_wait_ns;     // time the training loop spent waiting for them
};

// NVTX ranges and traced Python functions of a rank (inject/nvtx_ranges.h,
// inject/python_tracer.h), aggregated per name and kind. A name is the
// range's message (the function's dotted name) cut to kRangeNameBytes - 1
// bytes; slot 0 is "(other)": the ranges whose names came after the first
// kMaxRanges - 1.
constexpr int kMaxRanges = 64;
constexpr size_t kRangeNameBytes = 48;
// RangeSlot::kind (page version 9); a reader takes any other value as kNvtx.
enum class RangeKind : uint32_t {
  kNvtx = 0,            // an NVTX range
  kPythonFunction = 1,  // the calls of a traced Python function (XPU_TIMER_HOST_TRACING_FUNC)
};
struct RangeSlot {
  char name[kRangeNameBytes];  // printable ASCII, NUL-terminated (cleaned by the reader)
  uint32_t kind;               // RangeKind
  uint32_t reserved;
  uint64_t count;   // ranges that ended
  uint64_t sum_ns;  // their total duration (host clock)
  uint64_t hist[kHistBuckets];
};

// How the rank's training steps are recognised (StepCounters::source).
enum class StepSource : uint32_t {
  kNone = 0,
  kNvtxRange = 1,  // every XPU_TIMER_STEP_RANGE range is one step
  kOptimizer = 2,  // the time between two optimizer steps (a Python hook)
};
struct StepCounters {
  uint32_t source;  // StepSource
  uint32_t reserved;
  uint64_t steps;
  uint64_t sum_ns;
  uint64_t last_ns;  // duration of the latest step
  uint64_t hist[kHistBuckets];
  // GPU idle time within steps (inject/step_bubbles.h): steps measured, the
  // union of their matrix product and copy GPU time, the rest of their time,
  // the latest measured step, and GEMMs/copies in them without a timing.
  uint64_t measured;
  uint64_t busy_ns;
  uint64_t idle_ns;
  uint64_t last_busy_ns;
  uint64_t last_window_ns;
  uint64_t untimed_ops;
};

// xpu-timer's own cost in the rank (page version 7; docs/metrics.md
// "Cost"): the CPU time of its Poller thread, and the time its hooks spend
// on the user's threads, measured on one call in `hook_sample_every` of each
// thread (begin and end of a TimedCall: the clock reads, the sample gate,
// the queue, the CUDA events) and summed: hook_sampled_ns x
// hook_sample_every estimates the total.
struct SelfCost {
  uint64_t poller_cpu_ns;
  uint64_t hook_sampled_calls;
  uint64_t hook_sampled_ns;
  uint64_t hook_sample_every;
};

// StatusPage::flags
// Timing is off for the rest of the process (a CUDA error of the background
// thread): inflight_count stays 0 while the rank may well be inside a
// collective, so "no operation in flight" means nothing for this rank.
constexpr uint32_t kPageFlagTimingDisabled = 1;

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
  // Valid when inflight_count > 0: the operation in flight the hang clock
  // follows: of those that started (started_ns != 0) the one that started
  // first, else the one launched first.
  OpRef oldest_inflight;
  OpRef last_completed;         // valid when completed_total > 0
  uint64_t dropped_queue_full;  // records lost because the hot-path queue was full
  uint64_t skipped_capture;     // calls not timed because the stream was capturing a graph
  uint64_t hook_errors;         // calls where our code failed and passed through
  uint64_t queue_depth;         // records waiting for the poller at the last pass
  CommSlot comms[kMaxComms];
  uint32_t nmetrics;
  uint32_t flags;  // kPageFlag*
  MetricSlot metrics[kMaxMetrics];
  // Counted on every call, never sampled (guarded by seq like the rest).
  RuntimeCounters runtime;
  PythonCounters python;
  // NVTX ranges and steps (page version 6).
  uint32_t nranges;  // slots of ranges[] in use
  uint32_t reserved_ranges;
  uint64_t ranges_dropped;  // ranges lost: queue full, or nested deeper than we track
  RangeSlot ranges[kMaxRanges];
  StepCounters steps;
  SelfCost self;  // page version 7
};
static_assert(std::is_standard_layout_v<StatusPage>);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

}  // namespace xpu_timer::proto
